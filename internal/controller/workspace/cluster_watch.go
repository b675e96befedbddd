package workspace

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// clusterEvents maps a ClusterDeployment's events to its workspaces: all of
// them when it appears or goes, and on an update only those whose reconcile
// reads something that changed. k0rdent writes a cluster's status each time
// a service on it changes state — every workspace's release, each counted
// into status.services and ServicesInReadyState ("<ready>/<total>") — and
// reconciling every workspace of the cluster on each of those writes made
// a rollout of n workspaces on a cluster cost n² reconciles.
func (r *Reconciler) clusterEvents() handler.EventHandler {
	all := r.mine(r.workspacesOfCluster)
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, all(ctx, e.Object))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, all(ctx, e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, all(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*k0rdentv1beta1.ClusterDeployment)
			n, ok2 := e.ObjectNew.(*k0rdentv1beta1.ClusterDeployment)
			if !ok1 || !ok2 {
				add(q, all(ctx, e.ObjectNew))
				return
			}
			reqs := r.mine(func(ctx context.Context, _ client.Object) []reconcile.Request {
				list := r.listBy(ctx, index.WorkspaceCluster, client.ObjectKeyFromObject(n).String())
				return requests(list, concernedBy(o, n, list))
			})(ctx, n)
			add(q, reqs)
		},
	}
}

// concernedBy is which of a cluster's workspaces an update of it concerns
// (keep, for requests): every one when anything a workspace's reconcile
// reads of its cluster changed (clusterView) or a service that is no
// workspace's release changed state (a Colony's service, which a
// prerequisite may be); otherwise the workspaces whose own release's entry
// in status.services changed.
func concernedBy(old, updated *k0rdentv1beta1.ClusterDeployment, workspaces []workspacesv1.WorkspaceDeployment) func(*workspacesv1.WorkspaceDeployment) bool {
	everyone := func(*workspacesv1.WorkspaceDeployment) bool { return true }
	if !equality.Semantic.DeepEqual(clusterView(old), clusterView(updated)) {
		return everyone
	}
	releases := map[string]bool{}
	for i := range workspaces {
		releases[plan.ReleaseName(updated.Name, workspaces[i].Name)] = true
	}
	changed := changedServices(old.Status.Services, updated.Status.Services)
	for name := range changed {
		if !releases[name] {
			return everyone
		}
	}
	return func(w *workspacesv1.WorkspaceDeployment) bool { return changed[plan.ReleaseName(updated.Name, w.Name)] }
}

// view is what a workspace's reconcile reads of its ClusterDeployment
// besides status.services: whether it is provisioned (and why not), its
// metadata, spec and reported region (routing and prerequisites read them).
type view struct {
	Name, Namespace     string
	Generation          int64
	Deleting            bool
	Labels, Annotations map[string]string
	Spec                k0rdentv1beta1.ClusterDeploymentSpec
	Provisioned         bool
	NotProvisioned      string
	Region, K8sVersion  string
}

// clusterView is a cluster's view.
func clusterView(cd *k0rdentv1beta1.ClusterDeployment) view {
	ok, why := k0rdentstatus.ClusterProvisioned(cd)
	v := view{Name: cd.Name, Namespace: cd.Namespace, Generation: cd.Generation, Deleting: !cd.DeletionTimestamp.IsZero(),
		Labels: cd.Labels, Annotations: cd.Annotations, Spec: cd.Spec, Provisioned: ok,
		Region: cd.Status.Region, K8sVersion: cd.Status.KubernetesVersion}
	if !ok {
		v.NotProvisioned = why // written in the workspace's condition
	}
	return v
}

// changedServices names the services whose entries differ between two
// status.services lists: added, removed or changed in any field.
func changedServices(old, updated []k0rdentv1beta1.ServiceState) map[string]bool {
	type key struct{ name, namespace string }
	before := make(map[key][]k0rdentv1beta1.ServiceState, len(old))
	for _, s := range old {
		k := key{s.Name, s.Namespace}
		before[k] = append(before[k], s)
	}
	after := make(map[key][]k0rdentv1beta1.ServiceState, len(updated))
	for _, s := range updated {
		k := key{s.Name, s.Namespace}
		after[k] = append(after[k], s)
	}
	out := map[string]bool{}
	for k, b := range before {
		if !equality.Semantic.DeepEqual(b, after[k]) {
			out[k.name] = true
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out[k.name] = true
		}
	}
	return out
}
