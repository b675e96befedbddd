package controllers

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// prerequisiteOwnerKind is the delivery owner kind of shared prerequisites.
const prerequisiteOwnerKind = "Prerequisite"

// prereqVerdict orders the outcomes of prerequisite checks, worst last.
type prereqVerdict int

const (
	prereqSatisfied prereqVerdict = iota
	prereqInstalling
	prereqFailed
	prereqConflict
)

// reconcilePrerequisites installs the class's prerequisites once per child
// cluster, sharing them between workspaces, and holds the workspace in
// InstallingPrerequisites until every one is healthy. Services the Colony
// installed on the cluster count. Once a generation of the workspace passed
// this step, later changes of a prerequisite do not flip the workspace.
func (r *WorkspaceDeploymentReconciler) reconcilePrerequisites(ctx context.Context, w *workspaceRun) (stepResult, error) {
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
	for _, p := range w.class.Spec.Prerequisites {
		st, verdict, err := r.checkPrerequisite(ctx, w, p)
		if err != nil {
			return stopWith(0), err
		}
		statuses = append(statuses, st)
		switch verdict {
		case prereqInstalling:
			notReady = append(notReady, st.Name)
		case prereqFailed, prereqConflict:
			failures = append(failures, st.Message)
		}
		worst = max(worst, verdict)
	}
	obj.Status.Prerequisites = statuses
	switch worst {
	case prereqConflict:
		msg := strings.Join(failures, "; ")
		conditions.MarkFalse(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.PrerequisiteNamespaceConflict, "%s", msg)
		r.fail(ctx, obj, workspacesv1.PrerequisiteNamespaceConflict, msg)
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
		return stopWith(0), nil
	}
	conditions.MarkTrue(obj, workspacesv1.PrerequisitesMetCondition, workspacesv1.PrerequisitesMetReason,
		"%d prerequisites are installed", len(statuses))
	return proceed, nil
}

// checkPrerequisite finds who provides one prerequisite on the cluster and
// how it is doing, creating the shared ServiceSet when nobody does.
func (r *WorkspaceDeploymentReconciler) checkPrerequisite(ctx context.Context, w *workspaceRun, p workspacesv1.PrerequisiteSpec) (workspacesv1.PrerequisiteStatus, prereqVerdict, error) {
	tmpl := p.ServiceTemplate.Name
	wanted := p.Namespace
	if wanted == "" {
		wanted = plan.DefaultPrerequisiteNamespace
	}
	st := workspacesv1.PrerequisiteStatus{Name: tmpl, Source: workspacesv1.PrerequisiteSourceWorkspace, Namespace: wanted}
	conflict := func(incumbentNS string) bool {
		if p.Namespace == "" || incumbentNS == p.Namespace {
			return false
		}
		st.Phase = workspacesv1.PrerequisiteFailed
		st.Message = fmt.Sprintf("prerequisite %q is already installed in namespace %q (source: %s); this class requests namespace %q",
			tmpl, incumbentNS, st.Source, p.Namespace)
		return true
	}

	ss := &k0rdentv1beta1.ServiceSet{}
	err := r.Get(ctx, client.ObjectKey{Namespace: w.cdKey.Namespace, Name: plan.PrerequisiteServiceSetName(w.cdKey.Name, tmpl)}, ss)
	switch {
	case err == nil:
		for _, s := range ss.Spec.Services {
			if s.Template == tmpl {
				st.Namespace = s.Namespace
			}
		}
		if conflict(st.Namespace) {
			return st, prereqConflict, nil
		}
		return serviceVerdict(st, ss.Status.Services, tmpl)
	case !apierrors.IsNotFound(err):
		return st, 0, fmt.Errorf("reading prerequisite ServiceSet: %w", err)
	}

	// The Colony may have installed it through the ClusterDeployment's services.
	for _, s := range w.cd.Status.Services {
		if s.Template == tmpl {
			st.Source, st.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
			if conflict(st.Namespace) {
				return st, prereqConflict, nil
			}
			return serviceVerdict(st, w.cd.Status.Services, tmpl)
		}
	}
	for _, s := range w.cd.Spec.ServiceSpec.Services {
		if s.Template == tmpl {
			st.Source, st.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
			if conflict(st.Namespace) {
				return st, prereqConflict, nil
			}
			st.Phase, st.Message = workspacesv1.PrerequisiteInstalling, "installed by the cluster's services"
			return st, prereqInstalling, nil
		}
	}

	if err := r.createPrerequisite(ctx, w, p, wanted); err != nil {
		return st, 0, err
	}
	st.Phase, st.Message = workspacesv1.PrerequisiteInstalling, "installing"
	return st, prereqInstalling, nil
}

// serviceVerdict reads the state of the service installing a template.
func serviceVerdict(st workspacesv1.PrerequisiteStatus, states []k0rdentv1beta1.ServiceState, tmpl string) (workspacesv1.PrerequisiteStatus, prereqVerdict, error) {
	for _, s := range states {
		if s.Template != tmpl {
			continue
		}
		switch s.State {
		case k0rdentv1beta1.ServiceStateDeployed:
			st.Phase, st.Message = workspacesv1.PrerequisiteSatisfied, ""
			return st, prereqSatisfied, nil
		case k0rdentv1beta1.ServiceStateFailed:
			st.Phase = workspacesv1.PrerequisiteFailed
			st.Message = fmt.Sprintf("Prerequisite %q failed: %s", tmpl, s.FailureMessage)
			return st, prereqFailed, nil
		}
	}
	st.Phase, st.Message = workspacesv1.PrerequisiteInstalling, "installing"
	return st, prereqInstalling, nil
}

// createPrerequisite renders and delivers the shared ServiceSet of a
// prerequisite. It belongs to no workspace: it outlives them, as other
// workspaces of the cluster share it.
func (r *WorkspaceDeploymentReconciler) createPrerequisite(ctx context.Context, w *workspaceRun, p workspacesv1.PrerequisiteSpec, namespace string) error {
	tmpl := p.ServiceTemplate.Name
	bundle, err := r.Bundles.Get(plan.PrerequisiteBundle)
	if err != nil {
		return fmt.Errorf("prerequisite bundle: %w", err)
	}
	req, err := plan.PrerequisiteRequest(w.class, p, w.cdKey.Name, w.cdKey.Namespace, namespace, r.Settings)
	if err != nil {
		return err
	}
	out, err := bundle.Render(req)
	if err != nil {
		return fmt.Errorf("rendering prerequisite %q: %w", tmpl, err)
	}
	name := plan.PrerequisiteServiceSetName(w.cdKey.Name, tmpl)
	owner := delivery.Owner{Kind: prerequisiteOwnerKind, Namespace: w.cdKey.Namespace, Name: name}
	if _, err := r.Sink.Apply(ctx, owner, out.Objects, nil); err != nil {
		return fmt.Errorf("delivering prerequisite %q: %w", tmpl, err)
	}
	return nil
}
