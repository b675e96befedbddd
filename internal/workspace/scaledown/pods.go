package scaledown

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodListLimit bounds the pods (and the ReplicaSets, StatefulSets and Jobs
// between them and the release) Observe reads from one namespace.
const PodListLimit = 2000

// owned are the kinds whose objects lie between a release's controllers and
// their pods: a Deployment's ReplicaSets, a CronJob's Jobs, a
// LeaderWorkerSet's StatefulSets and leader pods.
var owned = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "", Version: "v1", Kind: "Pod"},
}

func (r runner) observe(ctx context.Context, c client.Client, namespace, release string) (Result, error) {
	objs, err := r.releaseObjects(ctx, c, namespace, release)
	if err != nil {
		return Result{}, err
	}
	var res Result
	from := map[types.UID]bool{}
	for _, o := range objs {
		from[o.u.GetUID()] = true
		if o.running() {
			res.Remaining++
		}
	}
	var items []metav1.PartialObjectMetadata
	for _, gvk := range owned {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, l, client.InNamespace(namespace), client.Limit(r.podLimit())); err != nil {
			return Result{}, fmt.Errorf("listing %s in namespace %s: %w", gvk.Kind, namespace, err)
		}
		if l.GetContinue() != "" {
			return Result{}, fmt.Errorf("namespace %s holds more than %d %s objects; refusing to read them all", namespace, r.podLimit(), gvk.Kind)
		}
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(gvk)
		}
		items = append(items, l.Items...)
	}
	for _, m := range descendants(from, items) {
		if m.Kind == "Pod" && m.APIVersion == "v1" {
			res.Pods++
		}
	}
	return res, nil
}

// podLimit is PodListLimit, or the runner's limit when tests shrink it.
func (r runner) podLimit() int64 {
	if r.limit < ListLimit {
		return r.limit
	}
	return PodListLimit
}

// descendants returns the items owned, directly or through other items, by
// the objects whose UIDs are in from.
func descendants(from map[types.UID]bool, items []metav1.PartialObjectMetadata) []metav1.PartialObjectMetadata {
	in := make(map[types.UID]bool, len(from))
	for uid := range from {
		in[uid] = true
	}
	var out []metav1.PartialObjectMetadata
	taken := make([]bool, len(items))
	// Each pass takes at least one item or ends, so the loop ends.
	for changed := true; changed; {
		changed = false
		for i := range items {
			if taken[i] {
				continue
			}
			for _, ref := range items[i].OwnerReferences {
				if in[ref.UID] {
					taken[i], changed = true, true
					in[items[i].UID] = true
					out = append(out, items[i])
					break
				}
			}
		}
	}
	return out
}
