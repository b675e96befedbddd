package routes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/sinkset"
	"github.com/apiaryhq/apiary/internal/render"
)

// RegionalOwnerKind is the delivery owner kind of the Flux
// Kustomization that applies a regional cluster's routes.
const RegionalOwnerKind = "RegionalRoutes"

// Git commits workspaces' routes for Flux. The routes of each
// regional cluster have a folder of their own, <Path>/<namespace>/<name>,
// written by a Git sink of their own. A Flux Kustomization
// apiary-routes-<name> in the regional ClusterDeployment's namespace,
// rendered by the routes-kustomization bundle and committed through the
// installation's sink (Main), applies that folder to the regional cluster
// with its <name>-kubeconfig Secret, so the repository holds all that a
// rebuilt management cluster needs to publish the routes again. Add it to
// the manager: it is a Runnable.
type Git struct {
	// Main commits the Kustomizations: the installation's Git sink.
	Main *delivery.Git
	// Reader reads ClusterDeployments: the manager's cache.
	Reader client.Reader
	// Bundles holds the routes-kustomization bundle.
	Bundles *render.Registry
	// Source is the Flux GitRepository the Kustomizations read. Empty
	// when it could not be found, with SourceErr saying why.
	Source    access.SourceRef
	SourceErr error
	// Path is the folder of the repository that holds one folder per
	// regional cluster.
	Path string
	// Settings are the operator settings bundles see as .Input.operator.
	Settings map[string]any
	// Alive tells whether the workspace of a route owner exists; the
	// files of those that do not are swept from a regional cluster's
	// folder once its sink opens, and Flux prunes their objects.
	Alive func(delivery.Owner) bool
	// NewSink makes the Git sink of a regional cluster's folder, whose
	// Flux Kustomization is ks.
	NewSink func(ctx context.Context, regional types.NamespacedName, folder string, ks types.NamespacedName) (*delivery.Git, error)
	// SkipGoneSweep leaves out the search for regional clusters that are
	// gone (Gone): set on the shards that do not run the regional routes
	// controller, which consumes it (shards other than 0).
	SkipGoneSweep bool

	once sync.Once
	set  *sinkset.Set[types.NamespacedName, *delivery.Git]

	mu       sync.Mutex
	declared map[types.NamespacedName]*declaredKustomization
	// retiring holds the regional clusters whose Git folder is being
	// removed; found those the start-up sweep found in Git without a
	// ClusterDeployment.
	retiring, found map[types.NamespacedName]bool
	orphans         chan event.GenericEvent
	// made are the regional clusters whose sink was made, for SweepSoon.
	made map[types.NamespacedName]bool
	// resweep asks the loop of Start for a sweep of every sink (SweepSoon).
	resweepOnce sync.Once
	resweep     chan struct{}
}

// declaredKustomization is a regional cluster's Kustomization as rendered
// and handed to Main.
type declaredKustomization struct {
	objs      []*unstructured.Unstructured
	inventory *commonv1.ResourceInventory
}

var _ Sinks = (*Git)(nil)

func (s *Git) sinks() *sinkset.Set[types.NamespacedName, *delivery.Git] {
	s.once.Do(func() {
		s.set = &sinkset.Set[types.NamespacedName, *delivery.Git]{New: func(ctx context.Context, regional types.NamespacedName) (*delivery.Git, error) {
			g, err := s.NewSink(ctx, regional, s.Folder(regional), s.Kustomization(regional))
			if err == nil && s.Alive != nil {
				g.Sweep(OwnerKind, s.Alive) // runs once the clone is open
			}
			if err == nil {
				s.mu.Lock()
				if s.made == nil {
					s.made = map[types.NamespacedName]bool{}
				}
				s.made[regional] = true
				s.mu.Unlock()
			}
			return g, err
		}}
	})
	return s.set
}

// Start runs the regional clusters' sinks until ctx ends, and looks for
// the folders and Kustomization files of regional clusters that are gone
// once Main is open.
func (s *Git) Start(ctx context.Context) error {
	if !s.SkipGoneSweep {
		go s.sweepGone(ctx)
	}
	go s.resweepLoop(ctx)
	return s.sinks().Start(ctx)
}

// NeedLeaderElection makes the sinks run on the leader only.
func (s *Git) NeedLeaderElection() bool { return true }

// Subscribe returns the notices of every regional cluster's sink.
func (s *Git) Subscribe(kind string) <-chan event.GenericEvent {
	return s.sinks().Subscribe(kind)
}

// For returns the Git sink of a regional cluster's routes, after handing
// the Kustomization that applies them to Main. Errors of that Kustomization's
// commit are returned here, so they show on the workspaces' RoutesReady.
func (s *Git) For(ctx context.Context, regional types.NamespacedName) (delivery.Sink, error) {
	if err := s.refuseGone(ctx, regional); err != nil {
		return nil, err
	}
	if err := s.declare(ctx, regional); err != nil {
		return nil, err
	}
	g, err := s.sinks().Get(ctx, regional)
	if err != nil {
		return nil, fmt.Errorf("Git delivery of the routes of regional cluster %s: %w", regional, err)
	}
	return g, nil
}

// Open makes and starts the Git sink of a regional cluster, which sweeps
// its folder once open, without committing its Kustomization: the sweep at
// start reaches regional clusters whose workspaces are all gone.
func (s *Git) Open(ctx context.Context, regional types.NamespacedName) error {
	_, err := s.sinks().Get(ctx, regional)
	return err
}

// Folder is the repository folder of a regional cluster's routes.
func (s *Git) Folder(regional types.NamespacedName) string {
	return path.Join(s.Path, regional.Namespace, regional.Name)
}

// Kustomization names the Flux Kustomization of a regional cluster's routes.
func (s *Git) Kustomization(regional types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: regional.Namespace, Name: access.RoutesKustomizationName(regional.Name)}
}

// declare renders a regional cluster's Kustomization once and hands it to
// Main at every call: unchanged, that costs no Git or API request, and it
// reports the error of a failed commit. Calls are serialised: handing over
// is quick and keeps one inventory per regional cluster.
func (s *Git) declare(ctx context.Context, regional types.NamespacedName) error {
	if s.Source.Name == "" {
		err := s.SourceErr
		if err == nil {
			err = errors.New("no Flux GitRepository is known")
		}
		return fmt.Errorf("routes cannot be delivered through Git without the Flux GitRepository their Kustomization reads "+
			"(set --git-repository, or --git-kustomization to one with a sourceRef): %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.declared[regional]
	if d == nil {
		objs, err := s.render(ctx, regional)
		if err != nil {
			return fmt.Errorf("rendering the Flux Kustomization of regional cluster %s: %w", regional, err)
		}
		d = &declaredKustomization{objs: objs}
		if s.declared == nil {
			s.declared = map[types.NamespacedName]*declaredKustomization{}
		}
		s.declared[regional] = d
	}
	owner := delivery.Owner{Kind: RegionalOwnerKind, Namespace: regional.Namespace, Name: regional.Name}
	// Every shard with a workspace routed to the regional cluster writes
	// this file alike: it is of no shard's unit.
	res, err := s.Main.Apply(delivery.WithUnit(ctx, ""), owner, d.objs, d.inventory)
	if res != nil && res.Inventory != nil {
		d.inventory = res.Inventory
	}
	if err != nil {
		return fmt.Errorf("committing the Flux Kustomization %s of regional cluster %s: %w", s.Kustomization(regional), regional, err)
	}
	return nil
}

func (s *Git) render(ctx context.Context, regional types.NamespacedName) ([]*unstructured.Unstructured, error) {
	bundle, err := s.Bundles.Get(access.RoutesKustomizationBundle)
	if err != nil {
		return nil, err
	}
	in := access.KustomizationInput{
		Kustomization:    s.Kustomization(regional),
		Regional:         regional,
		Path:             s.Folder(regional),
		Source:           s.Source,
		KubeconfigSecret: regional.Name + k0rdentv1beta1.KubeconfigSecretSuffix,
		KubeconfigKey:    k0rdentv1beta1.KubeconfigSecretKey,
		Labels:           map[string]string{"app.kubernetes.io/managed-by": "apiary"},
		Operator:         s.Settings,
	}
	out, err := bundle.RenderContext(ctx, in.Request())
	if err != nil {
		return nil, err
	}
	return out.Objects, nil
}

// resweepDelay is how long SweepSoon waits for further asks before it
// sweeps: units are taken up in bursts.
const resweepDelay = 3 * time.Second

// SweepSoon asks for a sweep of the folder of every regional cluster whose
// sink was made, resweepDelay after the last ask. A shard asks once it took
// units up: a sharded sink sweeps only the files of units its shard holds
// (delivery.GitOptions.MayRemove), so the sweep when it opened may have
// left the files of units the shard held only later.
func (s *Git) SweepSoon() {
	select {
	case s.resweepChan() <- struct{}{}:
	default:
	}
}

func (s *Git) resweepChan() chan struct{} {
	s.resweepOnce.Do(func() { s.resweep = make(chan struct{}, 1) })
	return s.resweep
}

// resweepLoop sweeps every made sink after SweepSoon, until ctx ends.
func (s *Git) resweepLoop(ctx context.Context) {
	asks := s.resweepChan()
	for {
		select {
		case <-ctx.Done():
			return
		case <-asks:
		}
		t := time.NewTimer(resweepDelay)
	debounce:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-asks:
				t.Reset(resweepDelay)
			case <-t.C:
				break debounce
			}
		}
		s.sweepMade()
	}
}

// sweepMade sweeps the folder of every regional cluster whose sink was
// made and still runs.
func (s *Git) sweepMade() {
	if s.Alive == nil {
		return
	}
	s.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(s.made))
	for k := range s.made {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		if g, ok := s.sinks().Lookup(k); ok {
			g.Sweep(OwnerKind, s.Alive)
		}
	}
}
