package workspace

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/prerequisite/install"
)

// reconcilePrerequisites installs the class's prerequisites once per child
// cluster, sharing them between workspaces, and holds the workspace in
// InstallingPrerequisites until every one is healthy. Services the Colony
// installed on the cluster count. Once a generation of the workspace passed
// this step, later changes of a prerequisite (an upgrade of its shared
// install by a newer class among them) do not flip the workspace.
func (r *Reconciler) reconcilePrerequisites(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if w.stopping != "" {
		return proceed, nil // a stopping workspace installs nothing
	}
	if len(w.class.Spec.Prerequisites) == 0 {
		obj.Status.Prerequisites = nil
		conditions.Delete(obj, workspacesv1.PrerequisitesMetCondition)
		return proceed, nil
	}
	if c := conditions.Get(obj, workspacesv1.PrerequisitesMetCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.Generation && obj.Status.Phase != workspacesv1.PhasePending {
		return proceed, nil
	}
	worst := install.Satisfied
	var statuses []workspacesv1.PrerequisiteStatus
	var notReady, failures []string
	conflictReason := ""
	for _, p := range w.class.Spec.Prerequisites {
		c, err := r.prerequisites.Ensure(ctx, &install.Target{Obj: obj, Class: w.class, CD: w.cd, CDKey: w.cdKey}, p)
		if err != nil {
			return stopWith(0), err
		}
		statuses = append(statuses, c.Status)
		switch c.Verdict {
		case install.Installing:
			notReady = append(notReady, c.Status.Name)
		case install.Conflict:
			if conflictReason == "" {
				conflictReason = c.Reason
			}
			failures = append(failures, c.Status.Message)
		case install.Failed:
			failures = append(failures, c.Status.Message)
		}
		worst = max(worst, c.Verdict)
	}
	obj.Status.Prerequisites = statuses
	switch worst {
	case install.Conflict:
		msg := reconciler.Enumerate(failures, "; ", 5)
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, conflictReason, "%s", msg)
		r.fail(ctx, obj, conflictReason, msg)
		return stopWith(0), nil
	case install.Failed:
		msg := reconciler.Enumerate(failures, "; ", 5)
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.PrerequisitesNotReadyReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.PrerequisitesNotReadyReason, msg)
		return stopWith(0), nil
	case install.Installing:
		msg := fmt.Sprintf("Installing %d/%d prerequisites: %s", len(notReady), len(statuses), reconciler.Enumerate(notReady, ", ", 10))
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.InstallingPrerequisitesReason, "%s", msg)
		obj.Status.Phase = workspacesv1.PhaseInstallingPrerequisites
		obj.Status.Message = msg
		w.waitFor(clusterTopic(waitPrerequisites, w.cdKey))
		return stopWith(0), nil
	}
	conditions.MarkTrue(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.PrerequisitesMetReason,
		"%d prerequisites are installed", len(statuses))
	return proceed, nil
}
