// Package scaledown scales a Helm release's workload controllers on a child
// cluster to zero and back, remembering their replicas on the objects
// themselves.
//
// Stop finds the release's Deployments, StatefulSets, ReplicaSets,
// LeaderWorkerSets and CronJobs by Helm's release annotations. It sets each
// running one's spec.replicas to zero (a CronJob's spec.suspend to true) and
// saves the previous value in an annotation, in one merge patch, so a crash
// between objects loses no count. Start writes the saved values back and
// removes the annotations. Both are idempotent; the caller keeps Helm from
// re-rendering the release while it is stopped.
package scaledown

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	// Warnings name saved values Start could not read and what it restored.
	Warnings []string
}

// Stopped reports whether no controller of the release runs any more.
func (r Result) Stopped() bool { return r.Remaining == 0 }

// runner carries the kinds and the per-kind list limit; tests shrink them.
type runner struct {
	kinds []kind
	limit int64
}

var defaultRunner = runner{kinds: kinds, limit: ListLimit}

// Stop scales every running controller of release in namespace to zero,
// saving its replicas on it. A controller already stopped keeps its saved
// count. Errors of single objects do not keep the others running.
func Stop(ctx context.Context, c client.Client, namespace, release string) (Result, error) {
	return defaultRunner.run(ctx, c, namespace, release, stopPatch)
}

// Start gives every stopped controller of release in namespace its saved
// replicas back and removes the annotation. Controllers Stop did not touch
// are left alone.
func Start(ctx context.Context, c client.Client, namespace, release string) (Result, error) {
	return defaultRunner.run(ctx, c, namespace, release, startPatch)
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

// stopPatch stops a running object, saving its value unless a saved one is
// there already (a second Stop, or Helm reset the replicas meanwhile).
func stopPatch(o object) (map[string]any, outcome, error) {
	if !o.running() {
		return nil, unchanged, nil
	}
	spec := map[string]any{"replicas": 0}
	value := formatReplicas(o.replicas())
	if o.kind.suspend {
		spec = map[string]any{"suspend": true}
		value = "false"
	}
	patch := map[string]any{"metadata": map[string]any{}, "spec": spec}
	if _, ok := o.saved(); ok {
		return patch, reverted, nil
	}
	patch["metadata"] = map[string]any{"annotations": map[string]any{o.saveKey(): value}}
	return patch, scaled, nil
}

// startPatch writes a stopped object's saved value back and removes it.
func startPatch(o object) (map[string]any, outcome, error) {
	v, ok := o.saved()
	if !ok {
		return nil, unchanged, nil
	}
	var spec map[string]any
	var warning error
	if o.kind.suspend {
		var s bool
		s, warning = parseSuspend(v)
		spec = map[string]any{"suspend": s}
	} else {
		var n int64
		n, warning = parseReplicas(v)
		spec = map[string]any{"replicas": n}
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{o.saveKey(): nil}},
		"spec":     spec,
	}, restored, warning
}
