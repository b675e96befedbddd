package workspaceclass

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// classTemplateIndex indexes WorkspaceClasses by the "<ns>/<name>" of
// every ServiceTemplate they use.
const classTemplateIndex = ".spec.serviceTemplates"

// SetupWithManager registers the WorkspaceClass controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workspacesv1.WorkspaceClass{}, classTemplateIndex,
		func(o client.Object) []string {
			c := o.(*workspacesv1.WorkspaceClass)
			keys := []string{plan.TemplateKey(c.Spec.ServiceTemplate).String()}
			for _, p := range c.Spec.Prerequisites {
				keys = append(keys, plan.TemplateKey(p.ServiceTemplate).String())
			}
			return keys
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("workspaceclass").
		For(&workspacesv1.WorkspaceClass{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&k0rdentv1beta1.ServiceTemplate{}, handler.EnqueueRequestsFromMapFunc(r.classesForTemplate)).
		// A workspace that goes may release a class that waits for deletion.
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.(*workspacesv1.WorkspaceDeployment).Spec.WorkspaceClassRef}}}
			}), builder.WithPredicates(reconciler.Deleted())).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

func (r *Reconciler) classesForTemplate(ctx context.Context, o client.Object) []reconcile.Request {
	list := &workspacesv1.WorkspaceClassList{}
	if err := r.List(ctx, list, client.MatchingFields{classTemplateIndex: client.ObjectKeyFromObject(o).String()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: c.Name}})
	}
	return out
}
