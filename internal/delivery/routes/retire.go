package routes

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// errRegionalGone refuses routes for a regional cluster that is gone or
// going, whose folder is being removed.
var errRegionalGone = errors.New("the regional cluster is gone or being deleted")

// refuseGone refuses a regional cluster whose folder is being removed, or
// whose ClusterDeployment is gone or being deleted (read from the cache):
// committing for it would bring back what Retire removes.
func (s *Git) refuseGone(ctx context.Context, regional types.NamespacedName) error {
	s.mu.Lock()
	retiring := s.retiring[regional]
	s.mu.Unlock()
	if !retiring && s.Reader != nil {
		gone, err := s.gone(ctx, regional)
		if err != nil {
			return err
		}
		retiring = gone
	}
	if retiring {
		return fmt.Errorf("routes of regional cluster %s: %w", regional, errRegionalGone)
	}
	return nil
}

// gone reports whether a regional cluster's ClusterDeployment is gone or
// being deleted.
func (s *Git) gone(ctx context.Context, regional types.NamespacedName) (bool, error) {
	cd := &k0rdentv1beta1.ClusterDeployment{}
	err := s.Reader.Get(ctx, regional, cd)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading regional ClusterDeployment %s: %w", regional, err)
	}
	return !cd.DeletionTimestamp.IsZero(), nil
}

// Holds reports whether Git may hold something of a regional cluster:
// its sink runs, its Kustomization was declared, the start-up sweep found
// it, or Main's clone has its folder. It reads no file.
func (s *Git) Holds(regional types.NamespacedName) bool {
	s.mu.Lock()
	known := s.declared[regional] != nil || s.found[regional] || s.retiring[regional]
	s.mu.Unlock()
	if _, open := s.sinks().Lookup(regional); known || open {
		return true
	}
	names, err := s.Main.Folders(path.Join(s.Path, regional.Namespace))
	return err != nil || slices.Contains(names, regional.Name)
}

// Retire removes what Git holds of a regional cluster that is gone: first
// the file of its Flux Kustomization in Apiary's folder, so that Flux
// prunes the Kustomization (whose finalizer prunes the routes where the
// regional cluster can still be reached, and skips them once its
// kubeconfig Secret is gone); then, once that removal is committed, the
// regional cluster's folder, in one commit of its sink, which then stops.
// It reports done once both are gone, and never waits for Flux or for the
// regional cluster. Until then, For refuses the regional cluster.
func (s *Git) Retire(ctx context.Context, regional types.NamespacedName) (bool, error) {
	s.mu.Lock()
	if s.retiring == nil {
		s.retiring = map[types.NamespacedName]bool{}
	}
	s.retiring[regional] = true
	delete(s.declared, regional)
	s.mu.Unlock()

	owner := delivery.Owner{Kind: RegionalOwnerKind, Namespace: regional.Namespace, Name: regional.Name}
	res, err := s.Main.RemoveOwner(owner)
	if err != nil {
		return false, fmt.Errorf("removing the Flux Kustomization %s of regional cluster %s: %w", s.Kustomization(regional), regional, err)
	}
	if res.Pending {
		return false, nil // Main's notice comes once it is committed
	}
	g, open := s.sinks().Lookup(regional)
	if !open {
		names, err := s.Main.Folders(path.Join(s.Path, regional.Namespace))
		if err != nil {
			return false, fmt.Errorf("listing the routes folders of namespace %s: %w", regional.Namespace, err)
		}
		if !slices.Contains(names, regional.Name) {
			s.retired(regional)
			return true, nil
		}
		if g, err = s.sinks().Get(ctx, regional); err != nil {
			return false, fmt.Errorf("opening the routes folder of regional cluster %s: %w", regional, err)
		}
	}
	if _, err := g.Retire(ctx); err != nil {
		return false, fmt.Errorf("removing the routes folder %s of regional cluster %s: %w", s.Folder(regional), regional, err)
	}
	s.sinks().Remove(regional)
	s.retired(regional)
	return true, nil
}

// retired forgets a regional cluster whose Git folder is gone.
func (s *Git) retired(regional types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.retiring, regional)
	delete(s.found, regional)
}

// Gone returns the regional clusters the start-up sweep finds in Git
// without a ClusterDeployment (or with one being deleted), one event each.
func (s *Git) Gone() <-chan event.GenericEvent { return s.goneChannel() }

func (s *Git) goneChannel() chan event.GenericEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.orphans == nil {
		s.orphans = make(chan event.GenericEvent)
	}
	return s.orphans
}

// sweepGone looks, once Main is open, for the regional clusters that have
// a folder under Path or a Kustomization file in Apiary's folder and whose
// ClusterDeployment is gone or being deleted, e.g. deleted while Apiary
// was not running, and hands them to Gone.
func (s *Git) sweepGone(ctx context.Context) {
	if s.Reader == nil {
		return
	}
	logger := log.FromContext(ctx).WithName("git-routes")
	select {
	case <-ctx.Done():
		return
	case <-s.Main.Opened():
	}
	keys := map[types.NamespacedName]bool{}
	for _, o := range s.Main.Owners(RegionalOwnerKind) {
		keys[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = true
	}
	namespaces, err := s.Main.Folders(s.Path)
	if err != nil {
		logger.Error(err, "listing the routes folders to find regional clusters that are gone")
	}
	for _, ns := range namespaces {
		names, err := s.Main.Folders(path.Join(s.Path, ns))
		if err != nil {
			logger.Error(err, "listing the routes folders to find regional clusters that are gone", "namespace", ns)
			continue
		}
		for _, name := range names {
			keys[types.NamespacedName{Namespace: ns, Name: name}] = true
		}
	}
	ch := s.goneChannel()
	for key := range keys {
		if gone, err := s.gone(ctx, key); err != nil || !gone {
			continue
		}
		s.mu.Lock()
		if s.found == nil {
			s.found = map[types.NamespacedName]bool{}
		}
		s.found[key] = true
		s.mu.Unlock()
		e := event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case ch <- e:
		case <-ctx.Done():
			return
		}
	}
}
