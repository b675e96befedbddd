package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/priorityclass"
)

// priorityClassResync bounds how long a workspace waits for its priority
// class to appear, on top of the class's watch.
const priorityClassResync = 5 * time.Minute

// resolvePriority resolves the priority the workspace waits for GPUs and
// quota with (package priorityclass) onto status.priority and the
// PriorityResolved condition. A workspace without a priority class has
// neither, and waits with 0, as before priorities existed. One that names
// a class it may not use fails (a tenant cannot raise its own priority);
// one whose class does not exist waits for it. It runs after the
// lifecycle: a stopping workspace takes no place in the queues, and no
// priorityClassName a tenant writes can hold back its stop, expiry or
// culling.
func (r *Reconciler) resolvePriority(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if w.stopping != "" {
		return proceed, nil
	}
	want := priorityclass.Wanted(w.class, obj)
	if want.Name == "" {
		obj.Status.Priority = nil
		conditions.Delete(obj, workspacesv1.PriorityResolvedCondition)
		return proceed, nil
	}
	// A change of the priority class wakes the workspace, whatever it waits for.
	w.waitFor(wake.Topic{Kind: waitPriorityClass, Key: want.Name})
	pc := &workspacesv1.WorkspacePriorityClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: want.Name}, pc); apierrors.IsNotFound(err) {
		pc = nil
	} else if err != nil {
		return stopWith(0), fmt.Errorf("reading WorkspacePriorityClass %s: %w", want.Name, err)
	}
	var nsLabels map[string]string
	if want.Own && pc != nil {
		l, err := quota.NamespaceLabels(ctx, r.Client, obj.Namespace)
		if err != nil {
			return stopWith(0), err
		}
		nsLabels = l
	}
	v := priorityclass.Resolve(want, pc, nsLabels)
	switch v.Outcome {
	case priorityclass.NotFound:
		obj.Status.Priority = nil
		conditions.MarkFalse(obj, workspacesv1.PriorityResolvedCondition, workspacesv1.PriorityClassNotFoundReason, "%s", v.Message)
		if !everDelivered(obj) {
			// It leaves the queues (a Pending workspace holds no place) until the class exists.
			conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
			conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
			pending(obj, "%s", v.Message)
			return stopWith(priorityClassResync), nil
		}
		// A delivered workspace keeps running; it waits with 0 if it queues again.
		return proceed, nil
	case priorityclass.NotAllowed:
		obj.Status.Priority = nil
		conditions.MarkFalse(obj, workspacesv1.PriorityResolvedCondition, workspacesv1.PriorityNotAllowedReason, "%s", v.Message)
		r.fail(ctx, obj, workspacesv1.PriorityNotAllowedReason, v.Message)
		return stopWith(0), nil
	}
	obj.Status.Priority = &workspacesv1.WorkspacePriority{ClassName: want.Name, Value: v.Value}
	w.priorityClass = pc
	conditions.MarkTrue(obj, workspacesv1.PriorityResolvedCondition, workspacesv1.PriorityResolvedReason, "%s", v.Message)
	return proceed, nil
}
