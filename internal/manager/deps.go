package manager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/gitauth"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/shard"
)

// deps are the mechanisms shared by the controllers.
type deps struct {
	bundles  *render.Registry
	sink     delivery.Sink
	git      bool // sink is the Git sink
	children *childcluster.Manager
	// shards decides which shard acts on which unit; nil without sharding.
	shards *shard.Gate
	// routes delivers workspaces' routes to regional clusters.
	routes routesink.Sinks
	// secrets wakes the Git sinks when their credentials or signing key
	// Secrets change.
	secrets *gitauth.Watcher
	// gits are the Git sinks, for the shards' hand-over.
	gits delivery.GitSinks
}

func newDeps(mgr ctrl.Manager, opts Options) (*deps, error) {
	bundles, err := render.NewRegistry(opts.BundleDir)
	if err != nil {
		return nil, fmt.Errorf("loading bundles: %w", err)
	}
	policy, err := opts.childServerPolicy()
	if err != nil {
		return nil, err
	}
	children := childcluster.NewManager(mgr.GetClient(), childcluster.Options{Scheme: mgr.GetScheme(), NewRESTConfig: opts.ChildRESTConfig,
		ServerPolicy: policy})
	if err := mgr.Add(children); err != nil {
		return nil, fmt.Errorf("adding the child-cluster manager: %w", err)
	}
	d := &deps{bundles: bundles, children: children}
	if opts.Shard.Enabled() {
		d.shards = &shard.Gate{Config: opts.Shard, Client: mgr.GetClient(), Reader: mgr.GetCache(),
			LeaseNamespace: opts.LeaderElectionNamespace, OnRelease: d.forgetUnit(mgr)}
		if opts.Git != nil || opts.TenantGit != nil {
			d.shards.Settled = func(_ context.Context, u shard.Unit) bool { return d.gits.Settled(u.Ref()) }
			d.shards.OnAcquire = func(ctx context.Context, _ shard.Unit, since time.Time) error {
				if err := d.gits.Refresh(ctx, since); err != nil {
					return err
				}
				if r, ok := d.routes.(*routesink.Git); ok {
					r.SweepSoon() // the files of units held from now on
				}
				return nil
			}
		}
	}
	if opts.Git == nil {
		d.sink = delivery.NewDirect(mgr.GetClient(), mgr.GetAPIReader(), delivery.DirectOptions{Scheme: mgr.GetScheme(),
			AdoptFrom: opts.AdoptFieldManagers})
		d.routes = routesink.NewDirect(children)
	} else {
		if err := d.watchSecrets(mgr); err != nil {
			return nil, err
		}
		g, err := d.newGitSink(context.Background(), mgr, *opts.Git, nil)
		if err != nil {
			return nil, fmt.Errorf("configuring Git delivery: %w", err)
		}
		if err := mgr.Add(g); err != nil {
			return nil, fmt.Errorf("adding the Git sink: %w", err)
		}
		d.sink, d.git = g, true
		routes, err := d.newRouteSinks(context.Background(), mgr, *opts.Git, g, d.settings(opts))
		if err != nil {
			return nil, fmt.Errorf("configuring Git delivery of workspace routes: %w", err)
		}
		// Only the process that runs the regional routes controller looks
		// for regional clusters that are gone.
		routes.SkipGoneSweep = !opts.clusterWide()
		if err := mgr.Add(routes); err != nil {
			return nil, fmt.Errorf("adding the route sinks: %w", err)
		}
		d.routes = routes
	}
	if opts.TenantGit != nil {
		if err := d.watchSecrets(mgr); err != nil {
			return nil, err
		}
		router := &delivery.Router{Default: d.sink, Reader: mgr.GetCache(), NewTenant: func(ctx context.Context, t delivery.Tenant) (*delivery.Git, error) {
			return d.newGitSink(ctx, mgr, tenantGitOptions(*opts.TenantGit, t), nil)
		}}
		if err := mgr.Add(router); err != nil {
			return nil, fmt.Errorf("adding the delivery router: %w", err)
		}
		d.sink, d.git = router, true
	}
	return d, nil
}

// watchSecrets adds the watcher of the Git sinks' Secrets, once.
func (d *deps) watchSecrets(mgr ctrl.Manager) error {
	if d.secrets != nil {
		return nil
	}
	d.secrets = &gitauth.Watcher{Informers: mgr.GetCache()}
	if err := mgr.Add(d.secrets); err != nil {
		return fmt.Errorf("adding the watcher of Git Secrets: %w", err)
	}
	return nil
}

// tenantGitOptions are the options of a tenant's Git sink: the tenant's
// GitRepository, path and Kustomization, the installation's commit settings
// and recipients, and a clone folder of its own.
func tenantGitOptions(base GitOptions, t delivery.Tenant) GitOptions {
	o := base
	o.URL, o.Branch, o.SecretRef = "", "", nil
	o.Path = t.Path
	o.GitRepositoryRef = &types.NamespacedName{Namespace: t.Namespace, Name: t.GitRepository}
	o.KustomizationRef = nil
	if t.Kustomization != "" {
		o.KustomizationRef = &types.NamespacedName{Namespace: t.Namespace, Name: t.Kustomization}
	}
	if o.CheckoutDir != "" {
		sum := sha256.Sum256([]byte(t.Path))
		o.CheckoutDir = filepath.Join(o.CheckoutDir, "tenants", t.Namespace, t.GitRepository+"-"+hex.EncodeToString(sum[:4]))
	}
	return o
}

// settings are the operator settings bundles see as .Input.operator.
func (d *deps) settings(opts Options) map[string]any {
	return map[string]any{"deliveryMode": d.sink.Mode()}
}

// cacheOptions trims what the manager caches: Secrets keep their data only
// when they hold a child cluster's kubeconfig, which Apiary reads on every
// reconcile; other Secrets are cached as metadata.
func cacheOptions(opts Options) cache.Options {
	o := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Transform: func(in any) (any, error) {
				s, ok := in.(*corev1.Secret)
				if !ok {
					return in, nil
				}
				s.ManagedFields = nil
				if !strings.HasSuffix(s.Name, k0rdentv1beta1.KubeconfigSecretSuffix) {
					s.Data, s.StringData = nil, nil
				}
				return s, nil
			}},
		},
	}
	if opts.Shard.Enabled() {
		// The shards' Leases, read to know whether a shard that holds a
		// unit still runs: only the leader-election namespace's.
		o.ByObject[&coordinationv1.Lease{}] = cache.ByObject{Namespaces: map[string]cache.Config{opts.LeaderElectionNamespace: {}}}
	}
	return o
}
