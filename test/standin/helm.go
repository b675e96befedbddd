package standin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// HelmDriver is the Helm storage driver the stand-in uses on a child
// cluster: releases are Secrets sh.helm.release.v1.<release>.v<revision> in
// the release namespace, as with the helm CLI.
const HelmDriver = "secrets"

// childTimeout bounds every request to a child cluster, so an unreachable
// cluster fails a reconcile instead of blocking it.
const childTimeout = 15 * time.Second

// release identifies a Helm release on a child cluster: the cluster is the
// ClusterDeployment the ServiceSet names.
type releaseKey struct {
	cluster   types.NamespacedName
	namespace string
	name      string
}

// child holds the Helm clients of one child cluster, built from its
// kubeconfig: discovery and REST mapping are shared, action configurations
// are per release namespace (Helm's storage driver is bound to one).
type childCluster struct {
	kubeconfigHash string
	raw            clientcmdapi.Config
	config         *rest.Config
	discovery      discovery.CachedDiscoveryInterface
	mapper         meta.RESTMapper

	mu      sync.Mutex
	actions map[string]*action.Configuration
}

// helmClients keeps the child clusters' Helm clients and counts the
// operations, safe for concurrent use; the zero value is ready.
type helmClients struct {
	mu       sync.Mutex
	children map[types.NamespacedName]*childCluster
	installs map[releaseKey]int
	upgrades map[releaseKey]int
}

// kubeconfigHash identifies a kubeconfig without keeping its content around.
func kubeconfigHash(kubeconfig []byte) string {
	sum := sha256.Sum256(kubeconfig)
	return hex.EncodeToString(sum[:8])
}

// child returns the clients of a cluster, rebuilt when its kubeconfig changed.
func (h *helmClients) child(cluster types.NamespacedName, kubeconfig []byte) (*childCluster, error) {
	hash := kubeconfigHash(kubeconfig)
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.children[cluster]; ok && c.kubeconfigHash == hash {
		return c, nil
	}
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig of cluster %s: %w", cluster, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of cluster %s: %w", cluster, err)
	}
	cfg.Timeout = childTimeout
	cfg.QPS, cfg.Burst = 100, 200
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for cluster %s: %w", cluster, err)
	}
	cached := memory.NewMemCacheClient(dc)
	c := &childCluster{
		kubeconfigHash: hash,
		raw:            *raw,
		config:         cfg,
		discovery:      cached,
		mapper:         restmapper.NewDeferredDiscoveryRESTMapper(cached),
		actions:        map[string]*action.Configuration{},
	}
	if h.children == nil {
		h.children = map[types.NamespacedName]*childCluster{}
	}
	h.children[cluster] = c
	return c, nil
}

// forget drops the clients of a cluster.
func (h *helmClients) forget(cluster types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.children, cluster)
}

// count records a successful install or upgrade.
func (h *helmClients) count(key releaseKey, install bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := &h.upgrades
	if install {
		m = &h.installs
	}
	if *m == nil {
		*m = map[releaseKey]int{}
	}
	(*m)[key]++
}

// counts returns how often a release was installed and upgraded.
func (h *helmClients) counts(key releaseKey) (installs, upgrades int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.installs[key], h.upgrades[key]
}

// actionConfig returns the Helm action configuration of a release namespace.
func (c *childCluster) actionConfig(namespace string, log logr.Logger) (*action.Configuration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg, ok := c.actions[namespace]; ok {
		return cfg, nil
	}
	cfg := &action.Configuration{}
	getter := &restGetter{child: c, namespace: namespace}
	debug := func(format string, v ...any) { log.V(2).Info(fmt.Sprintf(format, v...)) }
	if err := cfg.Init(getter, namespace, HelmDriver, debug); err != nil {
		return nil, fmt.Errorf("initialising Helm for namespace %s: %w", namespace, err)
	}
	c.actions[namespace] = cfg
	return cfg, nil
}

// restGetter is the genericclioptions.RESTClientGetter Helm builds its
// clients from: one child cluster, one default namespace.
type restGetter struct {
	child     *childCluster
	namespace string
}

// ToRESTConfig returns a copy of the child's REST config.
func (g *restGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.child.config), nil
}

// ToDiscoveryClient returns the child's cached discovery client.
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.child.discovery, nil
}

// ToRESTMapper returns the child's discovery-backed REST mapper.
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.child.mapper, nil }

// ToRawKubeConfigLoader returns the child's kubeconfig with the namespace as default.
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*g.child.raw.DeepCopy(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}

// installOptions are the Helm options of one release the stand-in honours.
type installOptions struct {
	createNamespace bool
}

// upgradeInstall installs a release, or upgrades it when it has a deployed
// revision. A release with no deployed revision (a failed or interrupted
// install) is uninstalled and installed again. It reports whether it
// installed.
func (c *childCluster) upgradeInstall(ctx context.Context, name, namespace, chartName string,
	values map[string]any, opts installOptions) (installed bool, err error) {
	chrt, err := loadChart(chartName)
	if err != nil {
		return false, err
	}
	cfg, err := c.actionConfig(namespace, logr.FromContextOrDiscard(ctx))
	if err != nil {
		return false, err
	}
	history, err := action.NewHistory(cfg).Run(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return false, fmt.Errorf("reading the history of release %s/%s: %w", namespace, name, err)
	}
	if hasDeployed(history) {
		up := action.NewUpgrade(cfg)
		up.Namespace = namespace
		up.MaxHistory = 2
		if _, err := up.RunWithContext(ctx, name, chrt, values); err != nil {
			return false, fmt.Errorf("upgrading release %s/%s: %w", namespace, name, err)
		}
		return false, nil
	}
	if len(history) > 0 {
		un := action.NewUninstall(cfg)
		un.IgnoreNotFound = true
		if _, err := un.Run(name); err != nil {
			return false, fmt.Errorf("removing the undeployed release %s/%s: %w", namespace, name, err)
		}
	}
	in := action.NewInstall(cfg)
	in.ReleaseName = name
	in.Namespace = namespace
	in.CreateNamespace = opts.createNamespace
	if _, err := in.RunWithContext(ctx, chrt, values); err != nil {
		return false, fmt.Errorf("installing release %s/%s: %w", namespace, name, err)
	}
	return true, nil
}

// hasDeployed reports whether a release history has a deployed revision and
// no operation in progress.
func hasDeployed(history []*release.Release) bool {
	deployed := false
	for _, r := range history {
		if r.Info == nil {
			continue
		}
		if r.Info.Status.IsPending() {
			return false
		}
		deployed = deployed || r.Info.Status == release.StatusDeployed
	}
	return deployed
}

// uninstall removes a release; a release that does not exist is done.
func (c *childCluster) uninstall(ctx context.Context, name, namespace string) error {
	cfg, err := c.actionConfig(namespace, logr.FromContextOrDiscard(ctx))
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.IgnoreNotFound = true
	if _, err := un.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("uninstalling release %s/%s: %w", namespace, name, err)
	}
	return nil
}
