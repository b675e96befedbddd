package delivery

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/sinkset"
)

// Namespace annotations that send the owners of a namespace to the tenant's
// own repository instead of the installation's sink.
const (
	// AnnotationGitRepository names a Flux GitRepository in the namespace
	// whose URL, branch and Secret Apiary commits with.
	AnnotationGitRepository = "delivery.apiary.exalsius.ai/git-repository"
	// AnnotationGitPath is the folder Apiary owns in that repository
	// (default "apiary/<namespace>").
	AnnotationGitPath = "delivery.apiary.exalsius.ai/git-path"
	// AnnotationGitKustomization names the Flux Kustomization in the
	// namespace that applies the folder, for the Synced condition.
	AnnotationGitKustomization = "delivery.apiary.exalsius.ai/git-kustomization"
)

// Tenant is the Git target a namespace's annotations choose.
type Tenant struct {
	// Namespace holds the GitRepository and Kustomization.
	Namespace string
	// GitRepository names the Flux GitRepository.
	GitRepository string
	// Path is the folder Apiary owns in the repository.
	Path string
	// Kustomization names the Flux Kustomization; empty when not set.
	Kustomization string
}

// TenantOf returns the target a namespace's annotations choose; nil when the
// namespace uses the installation's sink.
func TenantOf(ns metav1.Object) *Tenant {
	a := ns.GetAnnotations()
	repo := a[AnnotationGitRepository]
	if repo == "" {
		return nil
	}
	t := &Tenant{Namespace: ns.GetName(), GitRepository: repo, Path: a[AnnotationGitPath], Kustomization: a[AnnotationGitKustomization]}
	if t.Path == "" {
		t.Path = "apiary/" + ns.GetName()
	}
	return t
}

// Router is a Sink that delivers each owner through the Git sink of its
// namespace's tenant (see TenantOf) or, without one, through Default. Tenant
// sinks are made on first use and run until the Router stops. Add the Router
// to the manager: it is a Runnable.
type Router struct {
	// Default delivers owners of namespaces without a tenant.
	Default Sink
	// Reader reads Namespaces; the manager's cache, so that routing costs
	// no API request.
	Reader client.Reader
	// NewTenant makes the Git sink of a tenant.
	NewTenant func(ctx context.Context, t Tenant) (*Git, error)

	once    sync.Once
	tenants *sinkset.Set[Tenant, *Git]
}

var _ Sink = (*Router)(nil)

// set returns the tenants' sinks, fed with the default sink's notices.
func (r *Router) set() *sinkset.Set[Tenant, *Git] {
	r.once.Do(func() {
		r.tenants = &sinkset.Set[Tenant, *Git]{New: r.NewTenant}
		if g, ok := r.Default.(interface {
			Subscribe(string) <-chan event.GenericEvent
		}); ok {
			r.tenants.Also = g
		}
	})
	return r.tenants
}

// Start runs the tenant sinks until ctx ends.
func (r *Router) Start(ctx context.Context) error { return r.set().Start(ctx) }

// Mode is the mode of the default sink.
func (r *Router) Mode() string { return r.Default.Mode() }

// ModeOf is the mode of the sink that delivers the owners of namespace:
// ModeGit for a namespace with a tenant, the default sink's mode otherwise.
// It reads only the namespace, so it answers even while the tenant's sink
// cannot be made.
func (r *Router) ModeOf(ctx context.Context, namespace string) (string, error) {
	if namespace == "" {
		return r.Default.Mode(), nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return "", fmt.Errorf("reading namespace %s for its delivery target: %w", namespace, err)
	}
	if TenantOf(ns) != nil {
		return ModeGit, nil
	}
	return r.Default.Mode(), nil
}

// Apply delivers through the owner's sink.
func (r *Router) Apply(ctx context.Context, owner Owner, objs []*unstructured.Unstructured, prev *commonv1.ResourceInventory) (*Result, error) {
	s, err := r.sinkFor(ctx, owner.Namespace)
	if err != nil {
		return &Result{Inventory: prev, Pending: true}, err
	}
	return s.Apply(ctx, owner, objs, prev)
}

// Delete deletes through the owner's sink.
func (r *Router) Delete(ctx context.Context, owner Owner, prev *commonv1.ResourceInventory) (bool, error) {
	s, err := r.sinkFor(ctx, owner.Namespace)
	if err != nil {
		return false, err
	}
	return s.Delete(ctx, owner, prev)
}

// Synced asks the owner's sink whether Flux applied revision; unknown for a
// direct sink.
func (r *Router) Synced(ctx context.Context, reader client.Reader, owner Owner, revision string) (SyncState, error) {
	s, err := r.sinkFor(ctx, owner.Namespace)
	if err != nil {
		return SyncState{}, err
	}
	if g, ok := s.(*Git); ok {
		return g.Synced(ctx, reader, owner, revision)
	}
	return SyncState{Message: "delivered directly, not through Git"}, nil
}

// Subscribe returns one channel per kind fed by the default sink and every
// tenant sink, now and later.
func (r *Router) Subscribe(kind string) <-chan event.GenericEvent {
	return r.set().Subscribe(kind)
}

// sinkFor returns the sink of a namespace's owners.
func (r *Router) sinkFor(ctx context.Context, namespace string) (Sink, error) {
	if namespace == "" {
		return r.Default, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s for its delivery target: %w", namespace, err)
	}
	t := TenantOf(ns)
	if t == nil {
		return r.Default, nil
	}
	g, err := r.set().Get(ctx, *t)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: Git delivery to GitRepository %s: %w", namespace, t.GitRepository, err)
	}
	return g, nil
}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")
