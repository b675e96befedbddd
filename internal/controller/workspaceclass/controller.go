package workspaceclass

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspaceclasses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspaceclasses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspaceclasses/finalizers,verbs=update
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=servicetemplates,verbs=get;list;watch

// Reconciler mirrors the validity of a class's ServiceTemplates
// on the class, and keeps a class that workspaces use from disappearing
// under them.
type Reconciler struct {
	client.Client
	EventRecorder events.EventRecorder
	// Users, when set, lists the workspaces that use a class being
	// deleted, past the cache: with shards a replica caches only its own
	// buckets' workspaces, so the cache cannot say a class is unused. The
	// cache's index when nil.
	Users client.Reader
}

// usersRecheck is how soon a class being deleted is looked at again while
// workspaces use it, when Users is set: this replica does not see every
// workspace go.
const usersRecheck = 30 * time.Second

// Options configure the WorkspaceClass controller.
type Options struct {
	MaxConcurrentReconciles int
}

// Reconcile is the entry point of a WorkspaceClass's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &workspacesv1.WorkspaceClass{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, reconciler.IgnoreGone(metrics.KindWorkspaceClass, req, err)
	}
	defer metrics.ObserveReconcile(metrics.KindWorkspaceClass, req.NamespacedName, time.Now())
	sp := reconciler.NewPatcher(r.Client, obj)
	defer func() {
		if retErr != nil {
			conditions.MarkFalse(obj, commonv1.ReadyCondition, commonv1.FailedReason, "%s", retErr)
			conditions.MarkReconciling(obj, commonv1.ProgressingWithRetryReason, "%s", retErr)
		}
		// valid and validationError are a verdict on the generation just
		// evaluated, also when it is "not valid".
		observed := retErr == nil && obj.DeletionTimestamp.IsZero()
		if err := reconciler.PatchStatus(ctx, sp, obj, observed); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	if !obj.DeletionTimestamp.IsZero() {
		inUse, err := r.reconcileDelete(ctx, obj)
		if inUse && r.Users != nil {
			return ctrl.Result{RequeueAfter: usersRecheck}, err
		}
		return ctrl.Result{}, err
	}
	if err := reconciler.EnsureFinalizer(ctx, sp, obj, workspacesv1.WorkspaceClassFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.validate(ctx, obj)
}

// validate sets status.valid and the Ready condition from the class's
// ServiceTemplates, injection paths and reserved values.
func (r *Reconciler) validate(ctx context.Context, obj *workspacesv1.WorkspaceClass) error {
	setValid := func(valid bool, reason, msg string) {
		obj.Status.Valid, obj.Status.ValidationError = valid, ""
		conditions.Delete(obj, commonv1.ReconcilingCondition)
		if valid {
			conditions.MarkTrue(obj, commonv1.ReadyCondition, commonv1.SucceededReason, "%s", msg)
			conditions.Delete(obj, commonv1.StalledCondition)
			return
		}
		obj.Status.ValidationError = msg
		conditions.MarkFalse(obj, commonv1.ReadyCondition, reason, "%s", msg)
	}
	// The class is immutable: a bad injection path can only be fixed by a new class.
	if err := errors.Join(values.ValidateInjection(obj.Spec.ResourceInjection), values.ValidateFields(obj.Spec.UserFacingConfig)); err != nil {
		setValid(false, workspacesv1.InvalidResourceInjectionReason, err.Error())
		conditions.MarkStalled(obj, workspacesv1.InvalidResourceInjectionReason, "%s", err)
		return nil
	}
	if problems := plan.CheckClassValues(obj); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Error()
		}
		msg := strings.Join(msgs, "; ")
		setValid(false, problems[0].Reason, msg)
		conditions.MarkStalled(obj, problems[0].Reason, "%s", msg)
		return nil
	}
	conditions.Delete(obj, commonv1.StalledCondition)
	refs := []workspacesv1.ServiceTemplateRef{obj.Spec.ServiceTemplate}
	for _, p := range obj.Spec.Prerequisites {
		refs = append(refs, p.ServiceTemplate)
	}
	for i, ref := range refs {
		what := "ServiceTemplate"
		if i > 0 {
			what = "prerequisite ServiceTemplate"
		}
		reason, msg, err := r.checkTemplate(ctx, ref)
		if err != nil {
			return err
		}
		if reason != "" {
			setValid(false, reason, what+" "+msg)
			return nil
		}
	}
	setValid(true, "", fmt.Sprintf("ServiceTemplate %s is valid", plan.TemplateKey(obj.Spec.ServiceTemplate)))
	return nil
}

// checkTemplate returns a reason and message when the template is missing,
// invalid or outside its version constraint.
func (r *Reconciler) checkTemplate(ctx context.Context, ref workspacesv1.ServiceTemplateRef) (string, string, error) {
	st := &k0rdentv1beta1.ServiceTemplate{}
	if err := r.Get(ctx, plan.TemplateKey(ref), st); err != nil {
		if apierrors.IsNotFound(err) {
			return workspacesv1.ServiceTemplateNotFoundReason, plan.TemplateKey(ref).String() + " not found", nil
		}
		return "", "", fmt.Errorf("reading ServiceTemplate %s: %w", plan.TemplateKey(ref), err)
	}
	if !st.Status.Valid {
		msg := st.Status.ValidationError
		if msg == "" {
			msg = "is not valid"
		}
		return workspacesv1.ServiceTemplateInvalidReason, fmt.Sprintf("%s: %s", plan.TemplateKey(ref), msg), nil
	}
	if ref.VersionConstraint == "" {
		return "", "", nil
	}
	constraint, err := semver.NewConstraint(ref.VersionConstraint)
	if err != nil {
		return workspacesv1.ServiceTemplateInvalidReason,
			fmt.Sprintf("%s: versionConstraint %q: %s", plan.TemplateKey(ref), ref.VersionConstraint, err), nil
	}
	version, err := semver.NewVersion(st.Spec.Version)
	if err != nil {
		return workspacesv1.ServiceTemplateInvalidReason,
			fmt.Sprintf("%s: version %q is not semantic, so versionConstraint %q cannot hold", plan.TemplateKey(ref), st.Spec.Version, ref.VersionConstraint), nil
	}
	if !constraint.Check(version) {
		return workspacesv1.ServiceTemplateInvalidReason,
			fmt.Sprintf("%s: version %s does not satisfy %q", plan.TemplateKey(ref), version, ref.VersionConstraint), nil
	}
	return "", "", nil
}

// reconcileDelete holds the class while workspaces use it; inUse reports
// whether it does.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj *workspacesv1.WorkspaceClass) (inUse bool, err error) {
	users, err := r.users(ctx, obj.Name)
	if err != nil {
		return false, err
	}
	if len(users) > 0 {
		sort.Strings(users)
		shown := users
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(users)-10))
		}
		conditions.MarkFalse(obj, commonv1.ReadyCondition, workspacesv1.ClassInUseReason,
			"deletion waits: the class is used by %d workspaces: %s", len(users), strings.Join(shown, ", "))
		conditions.MarkReconciling(obj, workspacesv1.ClassInUseReason, "waiting for %d workspaces to go", len(users))
		return true, nil
	}
	controllerutil.RemoveFinalizer(obj, workspacesv1.WorkspaceClassFinalizer)
	return false, nil
}

// users names ("namespace/name") the workspaces of class name: from the
// cache's index, or listed page by page from Users.
func (r *Reconciler) users(ctx context.Context, name string) ([]string, error) {
	var users []string
	if r.Users == nil {
		list := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceClass: name}); err != nil {
			return nil, fmt.Errorf("listing workspaces of class %s: %w", name, err)
		}
		for _, w := range list.Items {
			users = append(users, w.Namespace+"/"+w.Name)
		}
		return users, nil
	}
	cont := ""
	for {
		list := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.Users.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("listing workspaces for the users of class %s: %w", name, err)
		}
		for _, w := range list.Items {
			if w.Spec.WorkspaceClassRef == name {
				users = append(users, w.Namespace+"/"+w.Name)
			}
		}
		if cont = list.Continue; cont == "" {
			return users, nil
		}
	}
}
