// Package controller registers every controller and runner of Apiary from
// one list (List), after building the state they share: the indexes of
// workspaces, the memory of prerequisite installs, the quota ledger, the
// bundle resolver and the route sweeper. No controller registers another;
// each kind's reconciler lives in a package of its own below this one, and
// none imports another's (kinds_test.go): what two kinds share lives
// outside internal/controller, as the prerequisite Installer does in
// internal/prerequisite/install.
package controller

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/jitter"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/colony"
	"github.com/apiaryhq/apiary/internal/controller/index"
	prerequisitectrl "github.com/apiaryhq/apiary/internal/controller/prerequisite"
	"github.com/apiaryhq/apiary/internal/controller/regionalroutes"
	"github.com/apiaryhq/apiary/internal/controller/tenantquota"
	"github.com/apiaryhq/apiary/internal/controller/workspace"
	"github.com/apiaryhq/apiary/internal/controller/workspaceclass"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/flux"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/impersonate"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/shard"
)

// The kinds the controllers watch besides Apiary's own, which must be
// served before they start.
var (
	clusterDeploymentKind = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ClusterDeployment"}
	serviceSetKind        = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceSet"}
	serviceTemplateKind   = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceTemplate"}
	tenantQuotaKind       = quotav1alpha1.GroupVersion.WithKind("TenantQuota")
	// priorityClassKind is Apiary's own CRD, added in a minor release: a
	// manager upgraded before its CRDs waits for it rather than failing.
	priorityClassKind = workspacesv1.GroupVersion.WithKind("WorkspacePriorityClass")
)

// Deps are the mechanisms the manager built for the controllers.
type Deps struct {
	Bundles *render.Registry
	Sink    delivery.Sink
	// Git is true when Sink commits to Git (Flux Kustomizations are then
	// watched).
	Git      bool
	Children *childcluster.Manager
	// Routes delivers workspaces' routes to regional clusters.
	Routes routesink.Sinks
	// Shards decides which shard acts on which unit; nil without sharding.
	Shards *shard.Gate
	// Settings are the operator settings bundles see as .Input.operator.
	Settings map[string]any
}

// Config is how the controllers are configured.
type Config struct {
	// Workers of each controller.
	ColonyWorkers, WorkspaceClassWorkers, WorkspaceWorkers, TenantQuotaWorkers int
	// InventoryInterval is the period of the Colonies' GPU inventory resync.
	InventoryInterval time.Duration
	// NoCrossNamespaceRefs refuses ClusterDeployments outside a workspace's namespace.
	NoCrossNamespaceRefs bool
	// Gateway is the tenant Gateway of regional clusters.
	Gateway types.NamespacedName
	// Mesh is how workspace namespaces join the mesh.
	Mesh mesh.Config
	// Policy orders the workspaces waiting for GPUs; StrictFIFO when empty.
	Policy admission.Policy
	// PreemptionRequeue is where a preempted workspace queues again; Eviction when empty.
	PreemptionRequeue workspacesv1.RequeueTimestamp
	// PrerequisiteGracePeriod, when set, removes unused prerequisite installs.
	PrerequisiteGracePeriod time.Duration
	// ValuesFromServiceAccount, when set, makes workspaces' valuesFrom
	// objects be read as this ServiceAccount of their namespace.
	ValuesFromServiceAccount string
	// Clock is the clock of every decision of the workspace and
	// TenantQuota controllers and of the quota ledger; the wall clock
	// when nil.
	Clock clock.PassiveClock
	// Activity reads workspaces' last activity for idle policies; idle
	// culling is off when nil.
	Activity workspace.ActivityReader
	// ClusterWide runs the controllers that are not per cluster
	// (WorkspaceClass, TenantQuota, the Git regional routes): shard 0, or
	// the only process.
	ClusterWide bool
}

// Names of the entries other parts of the manager look for.
const (
	ColonyEntry    = "colony"
	WorkspaceEntry = "workspacedeployment"
)

// Entry is one controller or runner: its name (a controller's name), the
// kinds it needs served, and how it is added to the manager.
type Entry struct {
	Name     string
	Requires []schema.GroupVersionKind
	Setup    func(ctrl.Manager) error
}

// List builds what the controllers share and returns every controller and
// runner this process runs, in order. Call it once per manager, before the
// manager starts.
func List(mgr ctrl.Manager, d Deps, c Config) ([]Entry, error) {
	if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	setJitter()
	if c.Policy == "" {
		c.Policy = admission.StrictFIFO
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	withFlux := func(kinds ...schema.GroupVersionKind) []schema.GroupVersionKind {
		if d.Git {
			kinds = append(kinds, flux.KustomizationGVK)
		}
		return kinds
	}
	bundles := &render.Resolver{Registry: d.Bundles, Cached: mgr.GetClient(), Reader: mgr.GetAPIReader()}
	installs := &prerequisite.Writes{}
	ledger := &quota.Ledger{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: c.Clock}
	var valuesReader client.Reader // the API reader
	if c.ValuesFromServiceAccount != "" {
		valuesReader = &impersonate.Reader{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			Name: c.ValuesFromServiceAccount}
	}
	var sweeper *routesink.Sweeper
	if d.Children != nil && d.Routes != nil {
		sweeper = routesink.NewSweeper(mgr.GetClient(), d.Routes, d.Children)
	}

	entries := []Entry{{
		Name:     ColonyEntry,
		Requires: withFlux(clusterDeploymentKind),
		Setup: func(mgr ctrl.Manager) error {
			return (&colony.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: mgr.GetEventRecorder("apiary-colony"),
				Bundles: bundles, Sink: d.Sink, SyncReader: mgr.GetCache(), Children: d.Children,
				InventoryInterval: c.InventoryInterval, Settings: d.Settings, Shards: d.Shards,
			}).SetupWithManager(mgr, colony.Options{MaxConcurrentReconciles: c.ColonyWorkers})
		},
	}}
	if c.ClusterWide {
		entries = append(entries, Entry{
			Name:     "workspaceclass",
			Requires: []schema.GroupVersionKind{serviceTemplateKind},
			Setup: func(mgr ctrl.Manager) error {
				r := &workspaceclass.Reconciler{Client: mgr.GetClient(), EventRecorder: mgr.GetEventRecorder("apiary-workspaceclass")}
				if d.Shards.Enabled() {
					r.Users = mgr.GetAPIReader() // a shard caches only its own buckets' workspaces
				}
				return r.SetupWithManager(mgr, workspaceclass.Options{MaxConcurrentReconciles: c.WorkspaceClassWorkers})
			},
		})
	}
	entries = append(entries, Entry{
		Name:     WorkspaceEntry,
		Requires: withFlux(clusterDeploymentKind, serviceSetKind, serviceTemplateKind, tenantQuotaKind, priorityClassKind),
		Setup: func(mgr ctrl.Manager) error {
			return (&workspace.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: mgr.GetEventRecorder("apiary-workspacedeployment"),
				Bundles: bundles, Sink: d.Sink, SyncReader: mgr.GetCache(), Children: d.Children,
				NoCrossNamespaceRefs: c.NoCrossNamespaceRefs, Settings: d.Settings, Gateway: c.Gateway, RouteSinks: d.Routes,
				Mesh: c.Mesh, Ledger: ledger, Policy: c.Policy, PreemptionRequeue: c.PreemptionRequeue, Shards: d.Shards, Installs: installs, Sweeper: sweeper,
				ValuesReader: valuesReader, Clock: c.Clock, Activity: c.Activity,
			}).SetupWithManager(mgr, workspace.Options{MaxConcurrentReconciles: c.WorkspaceWorkers})
		},
	})
	entries = append(entries, Entry{
		Name:     "workspace-orphans",
		Requires: []schema.GroupVersionKind{clusterDeploymentKind, serviceSetKind},
		Setup: func(mgr ctrl.Manager) error {
			return (&workspace.OrphanSweeper{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				EventRecorder: mgr.GetEventRecorder("apiary-workspacedeployment"), Children: d.Children}).SetupWithManager(mgr)
		},
	})
	if c.PrerequisiteGracePeriod > 0 {
		entries = append(entries, Entry{
			Name:     "prerequisite",
			Requires: []schema.GroupVersionKind{clusterDeploymentKind, serviceSetKind, serviceTemplateKind},
			Setup: func(mgr ctrl.Manager) error {
				return (&prerequisitectrl.Reconciler{
					Client: mgr.GetClient(), EventRecorder: mgr.GetEventRecorder("apiary-workspacedeployment"), Sink: d.Sink,
					GracePeriod: c.PrerequisiteGracePeriod, Shards: d.Shards, Installs: installs,
				}).SetupWithManager(mgr)
			},
		})
	}
	if g, ok := d.Routes.(*routesink.Git); ok && c.ClusterWide {
		entries = append(entries, Entry{
			Name:     "regionalroutes",
			Requires: withFlux(clusterDeploymentKind),
			Setup: func(mgr ctrl.Manager) error {
				return (&regionalroutes.Reconciler{
					Client: mgr.GetClient(), Sinks: g, APIReader: mgr.GetAPIReader(), Sharded: d.Shards.Enabled(),
				}).SetupWithManager(mgr)
			},
		})
	}
	if sweeper != nil {
		entries = append(entries, Entry{
			Name:     "route-sweeper",
			Requires: []schema.GroupVersionKind{clusterDeploymentKind},
			Setup: func(mgr ctrl.Manager) error {
				if err := mgr.Add(sweeper); err != nil {
					return fmt.Errorf("adding the route sweeper: %w", err)
				}
				return nil
			},
		})
	}
	// The quota's own upkeep (limits, summary, settling old in-flight
	// changes, recounts) reads workspaces live, never from the cache: one
	// writer is enough, on shard 0.
	if c.ClusterWide {
		entries = append(entries, Entry{
			Name:     "tenantquota",
			Requires: []schema.GroupVersionKind{tenantQuotaKind},
			Setup: func(mgr ctrl.Manager) error {
				return (&tenantquota.Reconciler{
					Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), EventRecorder: mgr.GetEventRecorder("apiary-tenantquota"),
					Ledger: ledger, Clock: c.Clock,
				}).SetupWithManager(mgr, tenantquota.Options{MaxConcurrentReconciles: c.TenantQuotaWorkers})
			},
		})
	}
	return entries, nil
}

var jitterOnce sync.Once

// setJitter spreads the periodic requeues of every controller over ±10%
// of their period (Flux's runtime/jitter), so that objects created
// together do not resync together.
func setJitter() {
	jitterOnce.Do(func() {
		jitter.SetGlobalIntervalJitter(0.1, rand.New(&lockedSource{src: rand.NewSource(time.Now().UnixNano())}))
	})
}

// lockedSource makes a rand.Source safe for the controllers' workers.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Int63()
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.Seed(seed)
}
