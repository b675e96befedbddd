package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// prereqVerdict orders the outcomes of prerequisite checks, worst last.
type prereqVerdict int

const (
	prereqSatisfied prereqVerdict = iota
	prereqInstalling
	prereqFailed
	prereqConflict
)

// prereqCheck is the outcome of checking one prerequisite: its status, a
// verdict and, for a conflict, its reason.
type prereqCheck struct {
	status  workspacesv1.PrerequisiteStatus
	verdict prereqVerdict
	reason  string
}

// reconcilePrerequisites installs the class's prerequisites once per child
// cluster, sharing them between workspaces, and holds the workspace in
// InstallingPrerequisites until every one is healthy. Services the Colony
// installed on the cluster count. Once a generation of the workspace passed
// this step, later changes of a prerequisite (an upgrade of its shared
// install by a newer class among them) do not flip the workspace.
func (r *Reconciler) reconcilePrerequisites(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if len(w.class.Spec.Prerequisites) == 0 {
		obj.Status.Prerequisites = nil
		conditions.Delete(obj, workspacesv1.PrerequisitesMetCondition)
		return proceed, nil
	}
	if c := conditions.Get(obj, workspacesv1.PrerequisitesMetCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.Generation && obj.Status.Phase != workspacesv1.PhasePending {
		return proceed, nil
	}
	worst := prereqSatisfied
	var statuses []workspacesv1.PrerequisiteStatus
	var notReady, failures []string
	conflictReason := ""
	for _, p := range w.class.Spec.Prerequisites {
		c, err := r.checkPrerequisite(ctx, w, p)
		if err != nil {
			return stopWith(0), err
		}
		statuses = append(statuses, c.status)
		switch c.verdict {
		case prereqInstalling:
			notReady = append(notReady, c.status.Name)
		case prereqConflict:
			if conflictReason == "" {
				conflictReason = c.reason
			}
			failures = append(failures, c.status.Message)
		case prereqFailed:
			failures = append(failures, c.status.Message)
		}
		worst = max(worst, c.verdict)
	}
	obj.Status.Prerequisites = statuses
	switch worst {
	case prereqConflict:
		msg := strings.Join(failures, "; ")
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, conflictReason, "%s", msg)
		r.fail(ctx, obj, conflictReason, msg)
		return stopWith(0), nil
	case prereqFailed:
		msg := strings.Join(failures, "; ")
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.PrerequisitesNotReadyReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.PrerequisitesNotReadyReason, msg)
		return stopWith(0), nil
	case prereqInstalling:
		msg := fmt.Sprintf("Installing %d/%d prerequisites: %s", len(notReady), len(statuses), strings.Join(notReady, ", "))
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

// checkPrerequisite finds who provides one prerequisite on the cluster and
// how it is doing: the shared install of any template that is the same
// prerequisite (upgraded when this class pins a newer version), else the
// Colony's services, else a new shared install, created here.
func (r *Reconciler) checkPrerequisite(ctx context.Context, w *workspaceRun, p workspacesv1.PrerequisiteSpec) (prereqCheck, error) {
	tmpl := p.ServiceTemplate.Name
	wanted := p.Namespace
	if wanted == "" {
		wanted = plan.DefaultPrerequisiteNamespace
	}
	c := prereqCheck{status: workspacesv1.PrerequisiteStatus{Name: tmpl, Source: workspacesv1.PrerequisiteSourceWorkspace, Namespace: wanted}}
	want, err := prerequisite.TemplateInfo(ctx, r.Client, tmpl, plan.TemplateKey(p.ServiceTemplate))
	if err != nil {
		return c, err
	}
	id := prerequisite.ID{Namespace: w.cdKey.Namespace, Cluster: w.cdKey.Name, Key: want.Key}
	unlock := r.Installs.Lock(id)
	defer unlock()
	inst, err := r.sharedInstall(ctx, id, want)
	if err != nil {
		return c, err
	}
	if inst != nil {
		return r.useSharedInstall(ctx, w, p, c, id, want, inst)
	}

	// The Colony may have installed it through the ClusterDeployment's services.
	for _, s := range w.cd.Status.Services {
		if s.Template == tmpl {
			c.status.Source, c.status.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
			if namespaceConflict(&c, p) {
				return c, nil
			}
			return serviceVerdict(c, w.cd.Status.Services, tmpl), nil
		}
	}
	for _, s := range w.cd.Spec.ServiceSpec.Services {
		if s.Template == tmpl {
			c.status.Source, c.status.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
			if namespaceConflict(&c, p) {
				return c, nil
			}
			return installing(c, "installed by the cluster's services"), nil
		}
	}

	target := plan.NewPrerequisiteTarget(w.cdKey.Name, tmpl, wanted)
	if err := r.deliverPrerequisite(ctx, w, p, target); err != nil {
		return c, err
	}
	r.Installs.Record(id, prerequisite.Candidate{ServiceSet: target.ServiceSet, Release: target.Release, Namespace: wanted, Template: want})
	return installing(c, "installing"), nil
}

// namespaceConflict fails the check when the class insists on a namespace
// other than the one the incumbent (of c.status) installs into (ADR-0007).
func namespaceConflict(c *prereqCheck, p workspacesv1.PrerequisiteSpec) bool {
	if p.Namespace == "" || c.status.Namespace == p.Namespace {
		return false
	}
	c.verdict, c.reason = prereqConflict, workspacesv1.PrerequisiteNamespaceConflict
	c.status.Phase = workspacesv1.PrerequisiteFailed
	c.status.Message = fmt.Sprintf("prerequisite %q is already installed in namespace %q (source: %s); this class requests namespace %q",
		c.status.Name, c.status.Namespace, c.status.Source, p.Namespace)
	return true
}

func installing(c prereqCheck, msg string) prereqCheck {
	c.verdict, c.status.Phase, c.status.Message = prereqInstalling, workspacesv1.PrerequisiteInstalling, msg
	return c
}

// serviceVerdict reads the state of the service installing a template.
func serviceVerdict(c prereqCheck, states []k0rdentv1beta1.ServiceState, tmpl string) prereqCheck {
	for _, s := range states {
		if s.Template != tmpl {
			continue
		}
		switch s.State {
		case k0rdentv1beta1.ServiceStateDeployed:
			c.verdict, c.status.Phase, c.status.Message = prereqSatisfied, workspacesv1.PrerequisiteSatisfied, ""
			return c
		case k0rdentv1beta1.ServiceStateFailed:
			c.verdict, c.status.Phase = prereqFailed, workspacesv1.PrerequisiteFailed
			c.status.Message = fmt.Sprintf("Prerequisite %q failed: %s", tmpl, s.FailureMessage)
			return c
		}
	}
	return installing(c, "installing")
}
