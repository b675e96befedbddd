package prerequisite

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// isPrerequisite selects shared prerequisite ServiceSets by their role label.
var isPrerequisite = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[plan.RoleLabel] == plan.RolePrerequisite
})

// SetupWithManager registers the prerequisite controller. It shares the
// WorkspaceDeployment controller's indexes and memory of installs. It reacts
// to its ServiceSets (created, deleted, annotated), to workspaces that
// arrive, change or go on their cluster, and to classes that appear (a
// workspace of a class not yet created counts as needing them).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.now == nil {
		r.now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("prerequisite").
		For(&k0rdentv1beta1.ServiceSet{}, builder.WithPredicates(isPrerequisite, predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.EnqueueRequestsFromMapFunc(r.prerequisitesOfWorkspace),
			builder.WithPredicates(reconciler.UpdatesWhen(func(old, updated client.Object) bool {
				return old.GetGeneration() != updated.GetGeneration() ||
					old.GetDeletionTimestamp().IsZero() != updated.GetDeletionTimestamp().IsZero()
			}))).
		Watches(&workspacesv1.WorkspaceClass{}, handler.EnqueueRequestsFromMapFunc(r.prerequisitesOfClass),
			builder.WithPredicates(reconciler.Created())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// prerequisitesOfWorkspace maps a workspace to the prerequisite ServiceSets
// of its cluster.
func (r *Reconciler) prerequisitesOfWorkspace(ctx context.Context, o client.Object) []reconcile.Request {
	w, ok := o.(*workspacesv1.WorkspaceDeployment)
	if !ok {
		return nil
	}
	sets, err := prerequisite.ServiceSets(ctx, r.Client, plan.ClusterKey(w))
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(sets))
	for i := range sets {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets[i])})
	}
	return out
}

// prerequisitesOfClass maps a class to the prerequisite ServiceSets of the
// clusters of its workspaces.
func (r *Reconciler) prerequisitesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceClass: o.GetName()}); err != nil {
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for i := range list.Items {
		for _, req := range r.prerequisitesOfWorkspace(ctx, &list.Items[i]) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}
