// Package delivery makes a cluster or a Git repository hold exactly a given
// set of objects for one Apiary owner, a Colony or a WorkspaceDeployment. A
// Sink applies the set, records what it holds in an inventory that the
// caller keeps on the owner's status, and prunes objects that left the set.
// The direct sink uses server-side apply and reads live objects from the
// manager's informer cache, so a reconcile that changes nothing makes no
// API request and returns an unchanged inventory. The Git sink commits the
// set for Flux and reads back what Flux applied.
package delivery

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/naming"
)

// Delivery modes, as reported in DeliveryStatus.Mode.
const (
	// ModeDirect applies objects to the cluster with server-side apply.
	ModeDirect = "direct"
	// ModeGit commits objects to a Git repository for Flux to apply.
	ModeGit = "git"
)

// Labels and annotations that a sink sets on every object it delivers.
const (
	// LabelOwnerKind holds the kind of the owner of a delivered object.
	LabelOwnerKind = "apiary.exalsius.ai/owner-kind"
	// LabelOwnerNamespace holds the namespace of the owner (empty for a
	// cluster-scoped owner).
	LabelOwnerNamespace = "apiary.exalsius.ai/owner-namespace"
	// LabelOwnerName holds the name of the owner, hashed when longer than a
	// label value may be.
	LabelOwnerName = "apiary.exalsius.ai/owner-name"
	// AnnotationAppliedDigest holds the digest (see Digest) of the desired
	// object the sink last applied, before the sink's labels and annotation
	// were added.
	AnnotationAppliedDigest = canon.AnnotationAppliedDigest
	// AnnotationShardUnit names, with sharding, the unit of work
	// (internal/shard) of the owner of a file the Git sink commits; set
	// from the context (WithUnit).
	AnnotationShardUnit = "shard.apiary.exalsius.ai/unit"
	// AnnotationAdopted marks an object the sink took over with an Update
	// (adopt.go) whose fields it has yet to settle; it holds the field
	// managers taken over from.
	AnnotationAdopted = "apiary.exalsius.ai/adopted"
)

// Owner identifies the Apiary object that a set of delivered objects belongs
// to: a Colony or a WorkspaceDeployment.
type Owner struct {
	// Kind of the owner, e.g. Colony.
	Kind string
	// Namespace of the owner; empty for a cluster-scoped owner.
	Namespace string
	// Name of the owner.
	Name string
	// UID of the owner. Sinks do not label objects with it; callers use it
	// for owner references, and sinks may record it.
	UID types.UID
	// Labels are extra labels set on every delivered object. The owner labels
	// (LabelOwnerKind, LabelOwnerNamespace, LabelOwnerName) win over them.
	Labels map[string]string
	// DeferAdoption, when set, lets the direct sink leave unwritten an object
	// another controller created for this owner that already holds what the
	// owner renders (see Direct.deferred); nil adopts such objects at once.
	DeferAdoption *DeferAdoption
}

// DeferAdoption is an owner's consent to deferred adoption: an object
// another controller wrote for the owner, and that names the owner's UID in
// its ownerReferences, is not written while it holds every field the owner
// renders (its reference to the owner counting for the one rendered,
// whatever their controller and blockOwnerDeletion flags), so that taking
// over from that controller costs no write; it is adopted (adopt.go) with
// the owner's first change of it.
type DeferAdoption struct {
	// MarkLabels are the keys of labels the owner's objects carry only to be
	// found by (the owner's name, app.kubernetes.io/managed-by): an object
	// that lacks one of them still holds what the owner renders. One that
	// carries it with another value does not.
	MarkLabels []string
}

// String names the owner as "Kind namespace/name" for messages.
func (o Owner) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Validate reports whether the owner has a kind and a name.
func (o Owner) Validate() error {
	if o.Kind == "" || o.Name == "" {
		return errors.New("delivery owner needs a kind and a name")
	}
	return nil
}

// OwnerLabels returns the labels that mark an object as delivered for this
// owner. They also select the owner's objects in a label selector.
func (o Owner) OwnerLabels() map[string]string {
	return map[string]string{
		LabelOwnerKind:      naming.LabelValue(o.Kind),
		LabelOwnerNamespace: naming.LabelValue(o.Namespace),
		LabelOwnerName:      naming.LabelValue(o.Name),
	}
}

// Owns reports whether labels carry this owner's owner labels.
func (o Owner) Owns(labels map[string]string) bool {
	for k, v := range o.OwnerLabels() {
		got, ok := labels[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// heldByOther returns a description of the Apiary owner named by labels when
// that is a different owner than o, and "" otherwise.
func (o Owner) heldByOther(labels map[string]string) string {
	kind, hasKind := labels[LabelOwnerKind]
	name, hasName := labels[LabelOwnerName]
	if !hasKind || !hasName || o.Owns(labels) {
		return ""
	}
	return Owner{Kind: kind, Namespace: labels[LabelOwnerNamespace], Name: name}.String()
}

// referencedByOther describes the owner of obj when obj carries no Apiary
// owner label and an ownerReference names another object of o's kind (the
// exalsius operator's object for another workspace whose name happens to be
// the same); "" otherwise.
func (o Owner) referencedByOther(obj metav1.Object) string {
	if o.UID == "" || hasOwnerLabels(obj.GetLabels()) || references(obj, o.UID) {
		return ""
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == o.Kind {
			return fmt.Sprintf("%s %s (uid %s, by its ownerReference)", ref.Kind, ref.Name, ref.UID)
		}
	}
	return ""
}

// Holds reports whether the live object belongs to o: it carries o's owner
// labels or, carrying no Apiary owner label, names o's UID in its
// ownerReferences. Callers check it before acting on an object by its name.
func (o Owner) Holds(obj metav1.Object) bool { return o.ownsLive(obj) }

// HeldByOtherError says that an object the sink was asked to apply exists
// and belongs to another owner; nothing was written.
type HeldByOtherError struct {
	// Object describes the object, Holder its owner, Owner the one refused.
	Object, Holder, Owner string
}

func (e *HeldByOtherError) Error() string {
	return fmt.Sprintf("%s: held by %s, not applied for %s", e.Object, e.Holder, e.Owner)
}

// IsHeldByOther reports whether err (or one it joins or wraps) is a
// HeldByOtherError.
func IsHeldByOther(err error) bool {
	var h *HeldByOtherError
	return errors.As(err, &h)
}

// Result is what a sink did in one Apply.
type Result struct {
	// Inventory lists the objects the sink now holds for the owner, sorted by
	// ID. The caller stores it on the owner's status and passes it back as
	// prev on the next call.
	Inventory *commonv1.ResourceInventory
	// Changed lists, sorted, the IDs of the objects that were written or
	// pruned. Empty when the sink already held exactly the given set.
	Changed []string
	// Digests holds, by ID, the applied-digest annotation (see
	// AnnotationAppliedDigest) of each object of the set the sink holds,
	// so that a caller reads back only a live object that carries it.
	Digests map[string]string
	// Revision is the Git commit that holds the objects; empty for the
	// direct sink, and while changes are pending.
	Revision string
	// Pending is true while the sink holds changes of the owner that are
	// not in the target yet (the Git sink's next commit). The sink notifies
	// the owner once they are.
	Pending bool
}

// Sink makes a target hold exactly a set of objects for an owner.
type Sink interface {
	// Mode names the sink, ModeDirect or ModeGit.
	Mode() string
	// Apply makes the target hold exactly objs for owner: objects are
	// written when they differ from what the target holds, and objects of
	// prev that are not in objs are removed when they still belong to owner.
	// The objects are not modified. On error the Result is still returned
	// when possible, with an inventory of what the target holds, and should
	// be stored.
	Apply(ctx context.Context, owner Owner, objs []*unstructured.Unstructured, prev *commonv1.ResourceInventory) (*Result, error)
	// Delete removes every object of prev that still belongs to owner. It
	// returns done=true only once all of them are gone; until then the caller
	// keeps its finalizer and calls Delete again on a later reconcile.
	Delete(ctx context.Context, owner Owner, prev *commonv1.ResourceInventory) (done bool, err error)
}

// checkIdentity refuses object i of a set when it cannot be named: without
// a kind or a name, nothing can be applied, committed or pruned for it.
func checkIdentity(i int, o *unstructured.Unstructured) error {
	if o == nil || o.GetKind() == "" || o.GetName() == "" {
		return fmt.Errorf("object %d of the set has no kind or no name", i)
	}
	return nil
}
