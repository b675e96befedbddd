// Package scaledown scales a Helm release's workload controllers on a child
// cluster to zero and back.
//
// Stop finds the release's Deployments, StatefulSets, ReplicaSets,
// LeaderWorkerSets and CronJobs by Helm's release annotations. It sets each
// running one's spec.replicas to zero (a CronJob's spec.suspend to true),
// records the previous value in a Record the caller keeps where the
// tenant cannot write (the workspace's status), and writes it in an
// annotation too, in the same merge patch. Start writes the recorded values
// back, never more than the caller's limit (what the workspace is
// admitted), and removes the annotations. The annotations are read only for
// a release stopped without a Record (by an older Apiary, or one whose
// Record was lost in a crash): they are the tenant's to write (a chart may
// pass annotations from values), so they are trusted up to the limit only.
// Both are idempotent; the caller keeps Helm from re-rendering the release
// while it is stopped.
package scaledown

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Result is what one call found and did.
type Result struct {
	// Scaled controllers were running and are now at zero with their count saved.
	Scaled int
	// Reverted controllers were stopped but running again (Helm reset their
	// replicas); they are at zero again and keep the count saved first.
	Reverted int
	// Restored controllers got their saved count back from Start.
	Restored int
	// Remaining controllers of the release still run after the call.
	Remaining int
	// Pods of the release's controllers still exist (Observe only).
	Pods int
	// Objects are the controllers the call changed, as Kind/name.
	Objects []string
	// Warnings name saved values Start could not read or capped, and what
	// it restored.
	Warnings []string
	// Record is what Stop recorded: the Record it was given and the count
	// of every controller it scaled.
	Record Record
}

// Stopped reports whether no controller of the release runs any more.
func (r Result) Stopped() bool { return r.Remaining == 0 }

// runner carries the kinds and the per-kind list limit; tests shrink them.
type runner struct {
	kinds []kind
	limit int64
}

var defaultRunner = runner{kinds: kinds, limit: ListLimit}

// Record is what Stop saved of a release's controllers, by Kind/name: its
// replicas (a CronJob's entry: 1, it was not suspended).
type Record map[string]int64

// Stop scales every running controller of release in namespace to zero
// and returns rec with the count of each it scaled (Result.Record). A
// controller rec holds already keeps its count (Helm or a tenant scaled it
// up again: Reverted); a saved annotation on a running one is replaced by
// its live count. Errors of single objects do not keep the others running.
func Stop(ctx context.Context, c client.Client, namespace, release string, rec Record) (Result, error) {
	out := make(Record, len(rec))
	maps.Copy(out, rec)
	seen := Record{}
	res, err := defaultRunner.run(ctx, c, namespace, release, func(o object) (map[string]any, outcome, error) {
		return stopPatch(o, out, seen)
	})
	for _, key := range res.Objects {
		if n, ok := seen[key]; ok {
			out[key] = n
		}
	}
	res.Record = out
	return res, err
}

// Plan returns rec with the live count of every running controller of
// release in namespace that rec does not hold yet, changing nothing: what
// Stop is about to record. A caller that keeps the plan before calling Stop
// loses no count to a crash between Stop's writes.
func Plan(ctx context.Context, c client.Client, namespace, release string, rec Record) (Record, error) {
	objs, err := defaultRunner.releaseObjects(ctx, c, namespace, release)
	if err != nil {
		return nil, err
	}
	out := make(Record, len(rec))
	maps.Copy(out, rec)
	for _, o := range objs {
		if _, ok := out[o.String()]; !ok && o.running() {
			out[o.String()] = liveValue(o)
		}
	}
	return out, nil
}

// Start gives every controller of release in namespace that rec holds its
// recorded count back, at most limit, and removes its annotation. Without a
// Record (rec empty: stopped by an older Apiary), a controller's saved
// annotation is restored instead, at most limit too. Controllers neither
// names are left alone.
func Start(ctx context.Context, c client.Client, namespace, release string, rec Record, limit int64) (Result, error) {
	limit = min(max(limit, 0), MaxSavedReplicas)
	return defaultRunner.run(ctx, c, namespace, release, func(o object) (map[string]any, outcome, error) {
		return startPatch(o, rec, limit)
	})
}

// Observe counts the controllers of release in namespace that still run
// and the pods they (or the objects they own) still have, changing nothing.
func Observe(ctx context.Context, c client.Client, namespace, release string) (Result, error) {
	return defaultRunner.observe(ctx, c, namespace, release)
}

// outcome is what a patch does to one object.
type outcome int

const (
	unchanged outcome = iota
	scaled
	reverted
	restored
)

// patchFunc returns the merge patch for o (nil when o needs none), what it
// does, and a warning about o's saved value.
type patchFunc func(o object) (patch map[string]any, what outcome, warning error)

func (r runner) run(ctx context.Context, c client.Client, namespace, release string, build patchFunc) (Result, error) {
	objs, err := r.releaseObjects(ctx, c, namespace, release)
	if err != nil {
		return Result{}, err
	}
	var res Result
	var errs []error
	for _, o := range objs {
		what, warning, err := apply(ctx, c, o, build)
		if err != nil {
			errs = append(errs, err)
		}
		if warning != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %v", o, warning))
		}
		switch what {
		case scaled:
			res.Scaled++
		case reverted:
			res.Reverted++
		case restored:
			res.Restored++
		}
		if what != unchanged {
			res.Objects = append(res.Objects, o.String())
		}
		if o.running() {
			res.Remaining++
		}
	}
	return res, errors.Join(errs...)
}

// apply writes build's patch to o with o's resourceVersion as precondition,
// reading o again and rebuilding the patch on conflict. o holds the object
// as the API server last returned it.
func apply(ctx context.Context, c client.Client, o object, build patchFunc) (what outcome, warning, err error) {
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		what, warning = unchanged, nil
		if !first {
			fresh := &unstructured.Unstructured{}
			fresh.SetGroupVersionKind(o.kind.gvk)
			if err := c.Get(ctx, client.ObjectKeyFromObject(o.u), fresh); err != nil {
				return err
			}
			*o.u = *fresh
		}
		first = false
		patch, w, warn := build(o)
		if patch == nil {
			return nil
		}
		patch["metadata"].(map[string]any)["resourceVersion"] = o.u.GetResourceVersion()
		data, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, o.u, client.RawPatch(types.MergePatchType, data)); err != nil {
			return err
		}
		what, warning = w, warn
		return nil
	})
	if apierrors.IsNotFound(err) {
		return unchanged, nil, nil // deleted meanwhile: nothing left to scale
	}
	if err != nil {
		return unchanged, warning, fmt.Errorf("patching %s in namespace %s: %w", o, o.u.GetNamespace(), err)
	}
	return what, warning, nil
}

// stopPatch stops a running object. One rec holds keeps its recorded count
// (Reverted); another's live count goes into seen, for Stop to record once
// the patch is written, and into its annotation.
func stopPatch(o object, rec, seen Record) (map[string]any, outcome, error) {
	if !o.running() {
		return nil, unchanged, nil
	}
	spec := map[string]any{"replicas": 0}
	n := liveValue(o)
	value := formatReplicas(n)
	if o.kind.suspend {
		spec = map[string]any{"suspend": true}
		value = "false"
	}
	what := scaled
	if r, ok := rec[o.String()]; ok {
		what = reverted
		if !o.kind.suspend {
			value = formatReplicas(r)
		}
	} else {
		seen[o.String()] = n
	}
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{o.saveKey(): value}}, "spec": spec}, what, nil
}

// startPatch writes back what rec holds of o, at most limit, and removes
// o's annotation. Without a record (rec empty), o's annotation is read
// instead, at most limit too.
func startPatch(o object, rec Record, limit int64) (map[string]any, outcome, error) {
	v, annotated := o.saved()
	n, recorded := rec[o.String()]
	var warning error
	switch {
	case recorded:
	case len(rec) == 0 && annotated:
		n, warning = savedValue(o, v)
	default:
		return nil, unchanged, nil
	}
	n = max(n, 0) // the status's schema says so; never trusted
	if n > limit {
		warning = errors.Join(warning, fmt.Errorf("saved %d replicas, above the %d admitted; restoring %d", n, limit, limit))
		n = limit
	}
	spec := map[string]any{"replicas": n}
	if o.kind.suspend {
		spec = map[string]any{"suspend": n == 0}
	}
	meta := map[string]any{}
	if annotated {
		meta["annotations"] = map[string]any{o.saveKey(): nil}
	}
	return map[string]any{"metadata": meta, "spec": spec}, restored, warning
}

// liveValue is what Stop records of a running o: its replicas, at most
// MaxSavedReplicas; a CronJob's 1.
func liveValue(o object) int64 {
	if o.kind.suspend {
		return 1
	}
	return min(o.replicas(), MaxSavedReplicas)
}

// savedValue reads o's saved annotation v as a count: its replicas, or for
// a CronJob 1 when it ran (suspend false), 0 when it was suspended.
func savedValue(o object, v string) (int64, error) {
	if !o.kind.suspend {
		return parseReplicas(v)
	}
	s, err := parseSuspend(v)
	if s {
		return 0, err
	}
	return 1, err
}
