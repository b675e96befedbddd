// Package manager builds and runs Apiary's controller manager: the scheme,
// caches, health and readiness probes, leader election, and the controllers,
// each registered once the kinds it watches are served.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/kubeconfig"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/preflight"
	"github.com/apiaryhq/apiary/internal/queueview"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// Options configure the manager. main.go binds them to flags.
type Options struct {
	// RestConfig reaches the management cluster.
	RestConfig *rest.Config
	// ChildRESTConfig turns a child cluster's kubeconfig into a REST config;
	// childcluster.RESTConfigFromKubeconfig when nil. Tests wrap it to count
	// what Apiary asks of child clusters.
	ChildRESTConfig func(kubeconfig []byte) (*rest.Config, error)
	// ChildServerHTTPSOnly refuses child kubeconfigs whose server is plain http.
	ChildServerHTTPSOnly bool
	// ChildServerAllow lists the host names ("*.domain" for any name under
	// it), IP addresses and CIDRs child kubeconfigs' servers must match
	// (kubeconfig.ParseServerPolicy); any server when empty.
	ChildServerAllow []string
	// Clock is the one clock of every decision (expiry, idle culling,
	// admission order, admission and quota charge times, the activity
	// reader); the wall clock when nil. For tests.
	Clock clock.PassiveClock
	// Activity reads workspaces' last activity for classes with an idle
	// policy; built from the activity options when nil. For tests.
	Activity lifecycle.ActivityReader
	// ActivityPrometheusURL is the Prometheus HTTP API idle policies with
	// a prometheus source ask for GPU utilisation; such policies read
	// unknown activity (never culling) when empty.
	ActivityPrometheusURL string
	// ActivityPrometheusMetric is the GPU utilisation metric;
	// DCGM_FI_DEV_GPU_UTIL when empty (activity.Prometheus.Metric).
	ActivityPrometheusMetric string
	// ActivityPrometheusNamespaceLabel is the metric's label naming the
	// workspace's namespace; namespace or exported_namespace when empty.
	ActivityPrometheusNamespaceLabel string
	// ActivityProbeConcurrency bounds the activity probes in flight; 8 when zero.
	ActivityProbeConcurrency int
	// ActivityProbeTimeout bounds one activity probe; 5s when zero.
	ActivityProbeTimeout time.Duration
	// MetricsBindAddress serves Prometheus metrics; "0" disables it.
	MetricsBindAddress string
	// MetricsSecure serves the metrics over HTTPS (a self-signed
	// certificate unless MetricsCertDir holds tls.crt and tls.key) to
	// authenticated and authorised clients only: a bearer token the API
	// server accepts (TokenReview) of a subject allowed to get the
	// non-resource URL /metrics (SubjectAccessReview).
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables it.
	HealthProbeBindAddress string
	// QueueBindAddress serves waiting workspaces' queue positions over
	// HTTPS to their tenants (internal/queueview); "" or "0" disables it.
	QueueBindAddress string
	// QueueCertDir holds the queue server's tls.crt and tls.key; a
	// self-signed certificate when empty.
	QueueCertDir string

	// PprofBindAddress serves Go's profiles at /debug/pprof/; "" or "0"
	// disables it.
	PprofBindAddress string
	// LeaderElection makes one replica active at a time.
	LeaderElection bool
	// LeaderElectionID names the lease.
	LeaderElectionID string
	// LeaderElectionNamespace holds the lease; the in-cluster namespace when empty.
	LeaderElectionNamespace string
	// LeaderElectionLeaseDuration is how long a Lease lasts without
	// renewal (controller-runtime's 15s when zero); the renew deadline is
	// two thirds of it, the retry period 2/15.
	LeaderElectionLeaseDuration time.Duration
	// Concurrency is the number of workers per controller.
	Concurrency Concurrency
	// CRDCheckInterval is how often missing kinds are looked for; 10s when zero.
	CRDCheckInterval time.Duration
	// BundleDir holds user bundles, one folder each; built-in bundles only when empty.
	BundleDir string
	// InventoryInterval is the period of the Colony GPU inventory resync.
	InventoryInterval time.Duration
	// NoCrossNamespaceRefs refuses workspaces that target a ClusterDeployment
	// in another namespace.
	NoCrossNamespaceRefs bool
	// WorkspaceGatewayName and WorkspaceGatewayNamespace name the tenant
	// Gateway on regional clusters that workspace access routes attach to;
	// istio-ingressgateway in istio-system when empty.
	WorkspaceGatewayName, WorkspaceGatewayNamespace string
	// WorkspaceMeshMode is how workspace namespaces join the tenant's Istio
	// mesh: ambient (when empty), sidecar or none.
	WorkspaceMeshMode string
	// WorkspaceWaypointEnabled, in ambient mode, routes each child
	// cluster's workspaces through its waypoint Gateway <cd>-waypoint, which
	// must exist and be programmed on the regional and the child cluster
	// before routes are published. main.go turns it on by default, as the
	// exalsius operator does.
	WorkspaceWaypointEnabled bool
	// WorkspaceWaypointNamespace holds the waypoint Gateways on regional and
	// child clusters; istio-system when empty.
	WorkspaceWaypointNamespace string
	// Git, when set, delivers through Git for Flux instead of applying directly.
	Git *GitOptions
	// TenantGit, when set, lets a namespace send its owners to its own
	// repository (delivery.AnnotationGitRepository); its commit settings,
	// recipients and checkout folder apply to every tenant's sink.
	TenantGit *GitOptions
	// GPUQueueing orders the workspaces that wait for GPUs on a cluster:
	// admission.StrictFIFO (the default) or admission.BestEffortFIFO.
	GPUQueueing admission.Policy
	// PreemptionRequeue is where a preempted workspace queues again:
	// Eviction (the default) or Creation.
	PreemptionRequeue workspacesv1.RequeueTimestamp
	// PrerequisiteGracePeriod is how long a shared prerequisite that no
	// workspace of its cluster needs any more is kept before it is removed;
	// zero (the default) keeps it forever, as the exalsius operator does.
	PrerequisiteGracePeriod time.Duration
	// AdoptFieldManagers are the field managers of client-side writers
	// whose fields the direct sink takes over the first time it applies an
	// object it did not deliver (internal/adopt): the exalsius operator's
	// "manager" by default in main.go; none when empty.
	AdoptFieldManagers []string
	// ValuesFromServiceAccount, when set, makes workspaces' valuesFrom
	// Secrets and ConfigMaps be read as this ServiceAccount of the
	// workspace's namespace, so that a tenant reads through Apiary only
	// what that ServiceAccount may read (docs/security.md).
	ValuesFromServiceAccount string
	// Shard splits the work between replicas (internal/shard); off when
	// Shard.Shards ≤ 1. With sharding, leader election is on and its Lease
	// is the shard's, shard.LeaseName(Shard.Index).
	Shard shard.Config
	// SkipControllerNameValidation allows several managers in one process
	// (the sandbox's test runs one per delivery mode); controller-runtime
	// otherwise refuses a second controller of the same name.
	SkipControllerNameValidation bool
	// Logger is the root logger.
	Logger logr.Logger

	// controllers overrides the registered controllers, for tests.
	controllers []controllerSetup
}

// mesh is the mesh configuration of workspaces.
func (o Options) mesh() mesh.Config {
	return mesh.Config{Mode: mesh.Mode(o.WorkspaceMeshMode), Waypoints: o.WorkspaceWaypointEnabled,
		WaypointNamespace: o.WorkspaceWaypointNamespace}
}

// childServerPolicy restricts the servers of child kubeconfigs.
func (o Options) childServerPolicy() (kubeconfig.ServerPolicy, error) {
	return kubeconfig.ParseServerPolicy(o.ChildServerHTTPSOnly, o.ChildServerAllow)
}

// Concurrency is the number of workers of each controller.
type Concurrency struct {
	Colony              int
	WorkspaceClass      int
	WorkspaceDeployment int
	TenantQuota         int
}

// DefaultConcurrency is the number of workers each controller runs by default.
var DefaultConcurrency = Concurrency{Colony: 4, WorkspaceClass: 2, WorkspaceDeployment: 8, TenantQuota: 2}

// controllerSetup registers one controller once the kinds it watches are served.
type controllerSetup struct {
	name     string
	requires []schema.GroupVersionKind
	setup    func(mgr ctrl.Manager) error
}

// Run starts the manager and blocks until ctx ends or the manager fails.
func Run(ctx context.Context, opts Options) error {
	mgr, _, err := New(opts)
	if err != nil {
		return err
	}
	opts.Logger.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// New builds the manager with its probes and controller gates, without starting it.
func New(opts Options) (ctrl.Manager, []*preflight.Gate, error) {
	if opts.RestConfig == nil {
		return nil, nil, errors.New("no REST config")
	}
	if opts.GPUQueueing != "" {
		if err := opts.GPUQueueing.Validate(); err != nil {
			return nil, nil, err
		}
	}
	if err := ValidateRequeue(opts.PreemptionRequeue); err != nil {
		return nil, nil, err
	}
	if opts.PrerequisiteGracePeriod < 0 {
		return nil, nil, fmt.Errorf("the prerequisite grace period %s is negative", opts.PrerequisiteGracePeriod)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{} // one clock, shared by every controller and the activity reader
	}
	if err := opts.mesh().Validate(); err != nil {
		return nil, nil, err
	}
	if _, err := opts.childServerPolicy(); err != nil {
		return nil, nil, err
	}
	opts, err := opts.sharded()
	if err != nil {
		return nil, nil, err
	}
	if opts.Shard.Enabled() {
		metrics.SetShardInfo(opts.Shard.Index, opts.Shard.Shards)
	}
	scheme := apiaryscheme.New()
	// Apiary's kinds are read item by item: one object that does not
	// decode cannot blind the controllers to the others (quarantine.go).
	quarantined := newQuarantine(opts.RestConfig, scheme, opts.Logger)
	cacheOpts := cacheOptions(opts)
	cacheOpts.NewInformer = quarantined.newInformer
	var newCache cache.NewCacheFunc
	if opts.Shard.Enabled() {
		// Each shard caches only its own buckets' workspaces, ServiceSets
		// and Secrets (splitcache.go).
		newCache = newShardCache(opts.Shard, quarantined)
	}
	mgr, err := ctrl.NewManager(opts.RestConfig, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		NewCache:                      newCache,
		Logger:                        opts.Logger,
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		PprofBindAddress:              opts.PprofBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 leaseDurations(opts.LeaderElectionLeaseDuration, 1, 1),
		RenewDeadline:                 leaseDurations(opts.LeaderElectionLeaseDuration, 2, 3),
		RetryPeriod:                   leaseDurations(opts.LeaderElectionLeaseDuration, 2, 15),
		Controller:                    config.Controller{SkipNameValidation: ptr.To(opts.SkipControllerNameValidation)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	quarantined.report(mgr.GetClient(), mgr.GetEventRecorder("apiary-quarantine"))
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("cache-sync", cacheSynced(mgr)); err != nil {
		return nil, nil, fmt.Errorf("adding readiness check: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(opts.RestConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("creating discovery client: %w", err)
	}
	d, err := newDeps(mgr, opts)
	if err != nil {
		return nil, nil, err
	}
	setups := opts.controllers
	if setups == nil {
		if setups, err = d.controllers(mgr, opts); err != nil {
			return nil, nil, fmt.Errorf("setting up the controllers: %w", err)
		}
	}
	var gates []*preflight.Gate
	for _, c := range setups {
		g := &preflight.Gate{
			Name:      c.name,
			Discovery: dc,
			Required:  c.requires,
			Setup:     func() error { return c.setup(mgr) },
			Interval:  opts.CRDCheckInterval,
			Log:       opts.Logger.WithName("preflight"),
		}
		if err := mgr.Add(g); err != nil {
			return nil, nil, fmt.Errorf("adding gate for %s: %w", c.name, err)
		}
		gates = append(gates, g)
	}
	setMetricsSource(mgr, opts, d, gates)
	if a := opts.QueueBindAddress; a != "" && a != "0" {
		if err := mgr.Add(&queueview.Server{Reader: mgr.GetCache(), Config: mgr.GetConfig(), BindAddress: a,
			CertDir: opts.QueueCertDir, Log: opts.Logger.WithName("queue")}); err != nil {
			return nil, nil, fmt.Errorf("adding the queue positions server: %w", err)
		}
	}
	return mgr, gates, nil
}

// cacheSynced is a readiness check that passes once the manager's informer
// caches have synced.
func cacheSynced(mgr ctrl.Manager) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}
}

// leaseDurations is num/den of the Lease duration d, nil (controller-runtime's
// default) when d is not set.
func leaseDurations(d time.Duration, num, den int64) *time.Duration {
	if d <= 0 {
		return nil
	}
	v := d * time.Duration(num) / time.Duration(den)
	return &v
}

// ValidateRequeue reports an unknown requeue timestamp; empty is Eviction.
func ValidateRequeue(t workspacesv1.RequeueTimestamp) error {
	switch t {
	case "", workspacesv1.RequeueEviction, workspacesv1.RequeueCreation:
		return nil
	}
	return fmt.Errorf("unknown preemption requeue timestamp %q (want %s or %s)", t, workspacesv1.RequeueEviction, workspacesv1.RequeueCreation)
}
