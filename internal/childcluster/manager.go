// Package childcluster reaches the child clusters of k0rdent
// ClusterDeployments from the management cluster: REST clients and
// informer caches built from the Secret <cd>-kubeconfig (key "value"), kept per
// cluster, rebuilt when that Secret changes and bounded by timeouts, so that an
// unreachable child gives an error (and a condition) instead of a hung worker.
//
// Caches are started on demand by Watch, one per cluster shared by every
// owner (a Colony, a workspace's GPU gate, a stopped workspace, its routes),
// trimmed to the fields GPU inventory, the GPU gate and workspace routes
// read. Each kind has its own informer, started when an owner asks for it —
// the cluster's Nodes (GPU inventory, the GPU gate), its Pods (the GPU gate,
// stopped workspaces) and its Gateways (gateway.networking.k8s.io/v1: the
// tenant Gateway and the waypoints of regional and child clusters) — so a
// cluster costs its API server at most one list and one watch of each kind,
// however many owners share it. An informer no owner needs any more, and the
// cache when its last owner releases it, keep running for
// Options.IdleTimeout (DefaultIdleTimeout) before they stop, so that owners
// coming and going (a GPU admission after another) do not start and stop
// watches. Changes in a child are announced on Subscribe channels, so
// reconcilers react to watches instead of polling, and make no API request
// at steady state.
package childcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/kubeconfig"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

const (
	// KubeconfigSecretSuffix is appended to a ClusterDeployment's name to name
	// the Secret (in its namespace) holding the child's admin kubeconfig.
	KubeconfigSecretSuffix = k0rdentv1beta1.KubeconfigSecretSuffix
	// KubeconfigSecretKey is the data key of that Secret.
	KubeconfigSecretKey = k0rdentv1beta1.KubeconfigSecretKey

	defaultTimeout     = 10 * time.Second
	defaultSyncTimeout = 20 * time.Second
	defaultQPS         = 20
	defaultBurst       = 40
)

// Options configure a Manager. Zero values take the documented defaults.
type Options struct {
	// Scheme of the child clients; default Apiary's scheme.
	Scheme *runtime.Scheme
	// Timeout bounds every request of a child client; default 10s.
	Timeout time.Duration
	// SyncTimeout bounds the wait for a child cache to sync; default 20s.
	SyncTimeout time.Duration
	// QPS and Burst limit requests to each child; default 20 and 40.
	QPS   float32
	Burst int
	// NewRESTConfig parses a kubeconfig; default kubeconfig.RESTConfig with
	// ServerPolicy and AllowInsecureSkipTLSVerify.
	NewRESTConfig func(kubeconfig []byte) (*rest.Config, error)
	// ServerPolicy restricts the servers child kubeconfigs may name, and
	// with CIDRs the addresses their clients connect to. It applies to every
	// REST config, also those of a custom NewRESTConfig.
	ServerPolicy kubeconfig.ServerPolicy
	// AllowInsecureSkipTLSVerify lets the default NewRESTConfig accept
	// kubeconfigs that skip TLS verification, for tests.
	AllowInsecureSkipTLSVerify bool
	// IdleTimeout is how long a cache, or its Pod or Gateway informer,
	// keeps running after no owner needs it, for owners to come back to
	// without a new list and watch; default DefaultIdleTimeout. Negative
	// stops them at once.
	IdleTimeout time.Duration
	// Logger receives cache lifecycle and reachability changes; default the
	// controller-runtime logger named "childcluster".
	Logger *logr.Logger
}

// Manager hands out clients and informer caches of child clusters. It is safe
// for concurrent use; Stop (or the end of Start's context) stops every cache.
type Manager struct {
	mgmt client.Reader
	opts Options
	log  logr.Logger

	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterEntry
	// unreachable marks the clusters whose last cache start failed because
	// their API server could not be reached (see States).
	unreachable map[types.NamespacedName]bool

	subsMu     sync.RWMutex
	subs       []*subscription
	eventsOnce sync.Once
	events     <-chan event.GenericEvent

	stopOnce sync.Once
	stopCh   chan struct{}
	wg       sync.WaitGroup
}

// clusterEntry is everything the Manager keeps for one cluster.
type clusterEntry struct {
	client     client.Client
	clientHash [sha256.Size]byte
	cache      *ClusterCache
	// owners maps an owner key to what it needs.
	owners map[string]WatchOptions
	// lingers are the pending stops of the parts of the cache no owner
	// needs (see IdleTimeout).
	lingers map[part]*linger
}

// NewManager returns a Manager reading kubeconfig Secrets through mgmt (a
// cached reader of the management cluster).
func NewManager(mgmt client.Reader, opts Options) *Manager {
	if opts.Scheme == nil {
		opts.Scheme = apiaryscheme.New()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = defaultSyncTimeout
	}
	if opts.QPS <= 0 {
		opts.QPS = defaultQPS
	}
	if opts.Burst <= 0 {
		opts.Burst = defaultBurst
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.NewRESTConfig == nil {
		parse := kubeconfig.Options{Policy: opts.ServerPolicy, AllowInsecureSkipTLSVerify: opts.AllowInsecureSkipTLSVerify}
		opts.NewRESTConfig = func(data []byte) (*rest.Config, error) { return kubeconfig.RESTConfig(data, parse) }
	}
	log := ctrllog.Log.WithName("childcluster")
	if opts.Logger != nil {
		log = *opts.Logger
	}
	return &Manager{
		mgmt:        mgmt,
		opts:        opts,
		log:         log,
		clusters:    map[types.NamespacedName]*clusterEntry{},
		unreachable: map[types.NamespacedName]bool{},
		stopCh:      make(chan struct{}),
	}
}

// Start blocks until ctx ends, then stops the Manager; it lets a
// controller-runtime manager own the Manager's lifetime (mgr.Add).
func (m *Manager) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-m.stopCh:
	}
	m.Stop()
	return nil
}

// Stop stops every cache and notification goroutine and waits for them.
// Afterwards Client and Watch return ErrManagerStopped.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		m.subsMu.Lock()
		close(m.stopCh)
		m.subsMu.Unlock()
		m.mu.Lock()
		var caches []*ClusterCache
		for cd, e := range m.clusters {
			cancelLingers(e)
			if e.cache != nil {
				caches = append(caches, e.cache)
				e.cache.stop()
			}
			delete(m.clusters, cd)
		}
		m.mu.Unlock()
		for _, c := range caches {
			c.wait()
		}
	})
	m.wg.Wait()
}

func (m *Manager) isStopped() bool {
	select {
	case <-m.stopCh:
		return true
	default:
		return false
	}
}

// Forget drops the client, the cache and the owners of a cluster at once
// (lingering or not), e.g. when its ClusterDeployment is deleted or its
// shard released.
func (m *Manager) Forget(cd types.NamespacedName) {
	m.mu.Lock()
	e := m.clusters[cd]
	delete(m.clusters, cd)
	delete(m.unreachable, cd)
	if e != nil {
		cancelLingers(e)
	}
	var c *ClusterCache
	if e != nil && e.cache != nil {
		c = e.cache
		c.stop()
	}
	m.mu.Unlock()
	if c != nil {
		c.wait()
		m.log.V(1).Info("stopped child cluster cache", "cluster", cd, "reason", "forgotten")
	}
}

// Client returns an uncached client of the child cluster of ClusterDeployment
// cd. It is built once per kubeconfig content and rebuilt when the Secret
// changes; every request is bounded by Options.Timeout, and errors showing the
// child cannot be reached wrap ErrUnreachable and name the cluster.
func (m *Manager) Client(ctx context.Context, cd types.NamespacedName) (client.Client, error) {
	if m.isStopped() {
		return nil, ErrManagerStopped
	}
	kubeconfig, err := m.kubeconfig(ctx, cd)
	if err != nil {
		return nil, err
	}
	hash := kubeconfigHash(kubeconfig)
	m.mu.Lock()
	if e := m.clusters[cd]; e != nil && e.client != nil && e.clientHash == hash {
		c := e.client
		m.mu.Unlock()
		return c, nil
	}
	m.mu.Unlock()

	cfg, err := m.restConfig(cd, kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = m.opts.Timeout
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, clusterErr(cd, "creating HTTP client", err)
	}
	inner, err := client.NewWithWatch(cfg, client.Options{Scheme: m.opts.Scheme, HTTPClient: httpClient,
		Mapper: newCoreFirstMapper(cfg, httpClient)})
	if err != nil {
		return nil, clusterErr(cd, "creating client", err)
	}
	c := wrapClient(cd, inner)

	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entryLocked(cd)
	if e.client != nil && e.clientHash == hash {
		return e.client, nil // built concurrently; keep one
	}
	e.client, e.clientHash = c, hash
	return c, nil
}

// RESTConfig returns a new REST config of the child cluster of
// ClusterDeployment cd, for requests a client.Client cannot make (such as a
// Service's proxy). It is read and checked as Client's is: the kubeconfig
// Secret's content is refused when unsafe or outside the ServerPolicy, QPS,
// Burst and Options.Timeout apply, and errors never quote the kubeconfig.
// The config is the caller's to modify.
func (m *Manager) RESTConfig(ctx context.Context, cd types.NamespacedName) (*rest.Config, error) {
	if m.isStopped() {
		return nil, ErrManagerStopped
	}
	kubeconfig, err := m.kubeconfig(ctx, cd)
	if err != nil {
		return nil, err
	}
	cfg, err := m.restConfig(cd, kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = m.opts.Timeout
	return cfg, nil
}

// entryLocked returns the entry of cd, creating it. m.mu must be held.
func (m *Manager) entryLocked(cd types.NamespacedName) *clusterEntry {
	e := m.clusters[cd]
	if e == nil {
		e = &clusterEntry{owners: map[string]WatchOptions{}, lingers: map[part]*linger{}}
		m.clusters[cd] = e
	}
	return e
}

// kubeconfig reads the kubeconfig of cd from the management cluster.
func (m *Manager) kubeconfig(ctx context.Context, cd types.NamespacedName) ([]byte, error) {
	name := cd.Name + KubeconfigSecretSuffix
	secret := &corev1.Secret{}
	if err := m.mgmt.Get(ctx, types.NamespacedName{Namespace: cd.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cluster %s: %w: Secret %s/%s does not exist", cd, ErrKubeconfigNotFound, cd.Namespace, name)
		}
		return nil, fmt.Errorf("cluster %s: reading Secret %s/%s: %w", cd, cd.Namespace, name, err)
	}
	data := secret.Data[KubeconfigSecretKey]
	if len(data) == 0 {
		return nil, fmt.Errorf("cluster %s: %w: Secret %s/%s has no key %q", cd, ErrKubeconfigNotFound, cd.Namespace, name, KubeconfigSecretKey)
	}
	return data, nil
}

// restConfig parses a kubeconfig into a config with the Manager's limits
// and server policy. Errors never quote the kubeconfig.
func (m *Manager) restConfig(cd types.NamespacedName, data []byte) (*rest.Config, error) {
	invalid := func(err error) error {
		if !errors.Is(err, ErrInvalidKubeconfig) {
			err = fmt.Errorf("%w: %s", ErrInvalidKubeconfig, redactInput(SafeError(err), data))
		}
		return fmt.Errorf("cluster %s: Secret %s/%s%s: %w", cd, cd.Namespace, cd.Name, KubeconfigSecretSuffix, err)
	}
	if len(data) > kubeconfig.MaxSize {
		return nil, invalid(fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKubeconfig, len(data), kubeconfig.MaxSize))
	}
	cfg, err := m.opts.NewRESTConfig(data)
	if err != nil {
		return nil, invalid(err)
	}
	cfg = rest.CopyConfig(cfg)
	if err := m.opts.ServerPolicy.Apply(cfg); err != nil {
		return nil, invalid(err)
	}
	cfg.QPS, cfg.Burst = m.opts.QPS, m.opts.Burst
	cfg.UserAgent = "apiary-childcluster"
	return cfg, nil
}
