// Package uninstall releases what only Apiary releases, so that nothing is
// left undeletable once Apiary is stopped for good or replaced by the
// exalsius operator (`apiary uninstall`): the WorkspaceClass in-use
// finalizer, a name the exalsius operator does not know, and Apiary's
// annotations on the ServiceSets and ClusterDeployments it delivered. The
// finalizers Apiary shares with the exalsius operator (those of Colonies and
// WorkspaceDeployments) are left for whichever controller runs next, which
// releases them on delete. With Orphan, for removing Apiary while keeping
// what it created, it also removes the ownerReferences to Apiary's kinds
// and those shared finalizers, so that deleting the CRDs deletes nothing
// else. It refuses to run while Apiary's leader-election Lease, or a
// shard's, is held, since a running Apiary would add them again.
package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/shard"
)

// FieldOwner is the field manager of the cleanup's writes.
const FieldOwner = "apiary-uninstall"

// Finalizers are the finalizers only Apiary adds and releases.
var Finalizers = []string{workspacesv1.WorkspaceClassFinalizer}

// Annotations are the annotations only Apiary writes on objects it
// delivers, which nothing reads once it is gone.
var Annotations = []string{delivery.AnnotationAppliedDigest, delivery.AnnotationAdopted, prerequisite.AnnotationUnusedSince,
	shard.HolderAnnotation}

// Options configure Run.
type Options struct {
	// Lease is Apiary's leader-election Lease: Run refuses while it, or the
	// Lease of a shard (shard.LeaseName) in its namespace, is held, unless
	// Force. Only the shards' Leases are checked when its name is empty;
	// none when its namespace is empty too.
	Lease types.NamespacedName
	// Force runs even while the Lease is held.
	Force bool
	// DryRun reports what would change without writing.
	DryRun bool
	// Orphan also detaches what Apiary's objects own, so that it outlives
	// them and Apiary's CRDs: it removes every ownerReference to a kind of
	// OwnerGroups, then the finalizers of Colonies and WorkspaceDeployments
	// (OrphanFinalizers), which no controller releases once Apiary is gone.
	Orphan bool
	// Log receives one line per object changed; io.Discard when nil.
	Log io.Writer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Report counts what Run changed (or would change, in a dry run).
type Report struct {
	// Finalizers is the number of finalizers removed.
	Finalizers int
	// Annotated is the number of objects whose annotations were removed.
	Annotated int
	// OwnerReferences is the number of ownerReferences removed (Orphan).
	OwnerReferences int
}

// ErrRunning is returned when Apiary's Lease is held.
var ErrRunning = errors.New("apiary is running")

// Run removes Apiary's own finalizers and annotations from every object of
// the cluster. Every write has the object's resourceVersion as
// precondition; a conflict fails the run, which can be repeated.
func Run(ctx context.Context, c client.Client, opts Options) (Report, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var rep Report
	if err := checkLease(ctx, c, opts); err != nil {
		return rep, err
	}
	classes := &workspacesv1.WorkspaceClassList{}
	if err := c.List(ctx, classes); err != nil {
		return rep, fmt.Errorf("listing WorkspaceClasses: %w", err)
	}
	for i := range classes.Items {
		n, err := release(ctx, c, &classes.Items[i], Finalizers, opts)
		rep.Finalizers += n
		if err != nil {
			return rep, err
		}
	}
	for _, list := range []client.ObjectList{&k0rdentv1beta1.ServiceSetList{}, &k0rdentv1beta1.ClusterDeploymentList{}} {
		n, err := unannotate(ctx, c, list, opts)
		rep.Annotated += n
		if err != nil {
			return rep, err
		}
	}
	if opts.Orphan {
		if err := orphan(ctx, c, opts, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// checkLease refuses while one of Apiary's leader-election Leases in
// opts.Lease.Namespace is held and renewed within its duration: the main
// Lease opts.Lease.Name, or a shard's (shard.LeaseName), which sharded
// replicas hold instead.
func checkLease(ctx context.Context, c client.Client, opts Options) error {
	if opts.Force || (opts.Lease.Name == "" && opts.Lease.Namespace == "") {
		return nil
	}
	leases := &coordinationv1.LeaseList{}
	if err := c.List(ctx, leases, client.InNamespace(opts.Lease.Namespace)); err != nil {
		return fmt.Errorf("listing the Leases of %s: %w", opts.Lease.Namespace, err)
	}
	var held []string
	for i := range leases.Items {
		l := &leases.Items[i]
		if _, isShard := shard.LeaseIndex(l.Name); !isShard && (opts.Lease.Name == "" || l.Name != opts.Lease.Name) {
			continue
		}
		if s := l.Spec; leaseHeld(s, opts.Now()) {
			held = append(held, fmt.Sprintf("Lease %s/%s is held by %s (renewed %s)", l.Namespace, l.Name,
				*s.HolderIdentity, s.RenewTime.UTC().Format(time.RFC3339)))
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; scale Apiary down first, or pass --force: %s",
		ErrRunning, strings.Join(held, ", "), "a running Apiary adds its finalizers again")
}

// leaseHeld reports whether a Lease has a holder that renewed it within its
// duration (15s, client-go's default, when it states none).
func leaseHeld(s coordinationv1.LeaseSpec, now time.Time) bool {
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil {
		return false
	}
	d := 15 * time.Second
	if s.LeaseDurationSeconds != nil {
		d = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	return !now.After(s.RenewTime.Add(d))
}

// release removes finalizers from an object.
func release(ctx context.Context, c client.Client, obj client.Object, finalizers []string, opts Options) (int, error) {
	base := obj.DeepCopyObject().(client.Object)
	n := 0
	for _, f := range finalizers {
		if controllerutil.RemoveFinalizer(obj, f) {
			n++
			fmt.Fprintf(opts.Log, "%s %s: removing finalizer %s\n", kindOf(c, obj), describe(obj), f)
		}
	}
	if n == 0 || opts.DryRun {
		return n, nil
	}
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return 0, fmt.Errorf("removing the finalizers of %s: %w", describe(obj), client.IgnoreNotFound(err))
	}
	return n, nil
}

// unannotate removes Apiary's annotations from the objects of a list; a
// kind that is not served is skipped.
func unannotate(ctx context.Context, c client.Client, list client.ObjectList, opts Options) (int, error) {
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("listing: %w", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, fmt.Errorf("reading the list: %w", err)
	}
	n := 0
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			continue
		}
		base := obj.DeepCopyObject().(client.Object)
		ann := obj.GetAnnotations()
		changed := false
		for _, k := range Annotations {
			if _, ok := ann[k]; ok {
				delete(ann, k)
				changed = true
			}
		}
		if !changed {
			continue
		}
		n++
		fmt.Fprintf(opts.Log, "%s %s: removing Apiary's annotations\n", kindOf(c, obj), describe(obj))
		if opts.DryRun {
			continue
		}
		obj.SetAnnotations(ann)
		if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("removing the annotations of %s: %w", describe(obj), err)
		}
	}
	return n, nil
}

func kindOf(c client.Client, obj client.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "object"
	}
	return gvk.Kind
}

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
