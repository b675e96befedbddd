package delivery

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// deferred reports whether applyOne leaves live, an object the sink has not
// delivered, as it is: deferred adoption. It does when
//
//   - owner consents (Owner.DeferAdoption) and adoption is enabled
//     (DirectOptions.AdoptFrom and an uncached reader);
//   - live carries neither the applied digest nor any Apiary owner label,
//     and names owner's UID in its ownerReferences: another controller
//     created it for owner, as the exalsius operator does a workspace's
//     ServiceSet;
//   - live, as the cache has it, holds every field of the desired object
//     apart from what unmarked leaves out: the sink's owner labels and
//     digest annotation, the owner's mark labels live lacks, and the
//     desired object's ownerReference to owner: live's reference to the
//     same UID stands for it, whatever its controller and
//     blockOwnerDeletion flags say (the exalsius operator's is no
//     controller reference; the workspace controller renders one).
//
// Writing such an object would change nothing but Apiary's marks, those
// flags and the managed fields, so it costs no write now: the adopting
// Update (adopt), which moves the fields of the previous writer, comes
// with the owner's first change of it. Until then the object belongs to
// owner by its ownerReference (ownsLive), which pruning and deletion go by.
// A Secret the cache holds without its data is never deferred: nothing
// shows that it holds the desired data.
func (d *Direct) deferred(owner Owner, it *item, live client.Object) (bool, error) {
	if owner.DeferAdoption == nil || !d.adoption.Enabled() || d.apiReader == nil {
		return false, nil
	}
	if _, ok := live.GetAnnotations()[AnnotationAppliedDigest]; ok {
		return false, nil
	}
	if hasOwnerLabels(live.GetLabels()) || !references(live, owner.UID) {
		return false, nil
	}
	liveLabels := live.GetLabels()
	m, err := d.toMap(live)
	if err != nil {
		return false, fmt.Errorf("reading the live object: %w", err)
	}
	if canon.IsSecret(it.gvk) && !canon.HasData(m) {
		return false, nil
	}
	return d.holds(it.gvk, unmarked(it.obj.Object, liveLabels, owner), m), nil
}

// unmarked returns a copy of a prepared desired object of owner without
// what only marks it as owner's: the owner labels, the applied-digest
// annotation, the mark labels (Owner.DeferAdoption) that the live object's
// labels lack, and its ownerReferences to owner's UID. obj is not modified.
func unmarked(obj map[string]any, live map[string]string, owner Owner) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return out
	}
	md := make(map[string]any, len(meta))
	for k, v := range meta {
		md[k] = v
	}
	out["metadata"] = md
	drop := map[string]bool{LabelOwnerKind: true, LabelOwnerNamespace: true, LabelOwnerName: true}
	if owner.DeferAdoption != nil {
		for _, k := range owner.DeferAdoption.MarkLabels {
			if _, ok := live[k]; !ok {
				drop[k] = true
			}
		}
	}
	if labels, ok := meta["labels"].(map[string]any); ok {
		md["labels"] = without(labels, drop)
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		md["annotations"] = without(ann, map[string]bool{AnnotationAppliedDigest: true})
	}
	if refs, ok := meta["ownerReferences"].([]any); ok {
		var kept []any
		for _, r := range refs {
			if ref, ok := r.(map[string]any); !ok || owner.UID == "" || ref["uid"] != string(owner.UID) {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(md, "ownerReferences")
		} else {
			md["ownerReferences"] = kept
		}
	}
	return out
}

// without returns a copy of m without the keys of drop.
func without(m map[string]any, drop map[string]bool) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !drop[k] {
			out[k] = v
		}
	}
	return out
}

// hasOwnerLabels reports whether labels carry any of the owner labels, of
// whichever owner.
func hasOwnerLabels(labels map[string]string) bool {
	for _, k := range []string{LabelOwnerKind, LabelOwnerNamespace, LabelOwnerName} {
		if _, ok := labels[k]; ok {
			return true
		}
	}
	return false
}

// references reports whether obj has an ownerReference to the object with
// uid; never for an empty uid.
func references(obj metav1.Object, uid types.UID) bool {
	if uid == "" {
		return false
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// ownsLive reports whether a live object belongs to owner, so that the sink
// may prune or delete it: it carries owner's labels or, carrying no Apiary
// owner label of anyone, names owner's UID in its ownerReferences (an
// object another controller created for owner, whose adoption is deferred).
// An object carrying another Apiary owner's labels never belongs to owner.
func (o Owner) ownsLive(obj metav1.Object) bool {
	labels := obj.GetLabels()
	if o.Owns(labels) {
		return true
	}
	return !hasOwnerLabels(labels) && references(obj, o.UID)
}
