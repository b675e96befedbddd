package regionalroutes

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
)

func routedTo(regional string, entries int) *workspacesv1.WorkspaceDeployment {
	w := &workspacesv1.WorkspaceDeployment{}
	inv := &commonv1.ResourceInventory{}
	for range entries {
		inv.Entries = append(inv.Entries, commonv1.ResourceRef{ID: "ws-a_web_gateway.networking.k8s.io_HTTPRoute", Version: "v1"})
	}
	w.Status.Routes = &workspacesv1.WorkspaceRoutesStatus{Cluster: regional,
		Delivery: &commonv1.DeliveryStatus{Mode: delivery.ModeGit, Inventory: inv}}
	return w
}

// TestRoutesLeftEnqueuesTheRegionalClusterTheRoutesLeft wakes the regional
// routes controller for the regional cluster a workspace's routes left, and
// only then.
func TestRoutesLeftEnqueuesTheRegionalClusterTheRoutesLeft(t *testing.T) {
	tests := []struct {
		name     string
		old, cur *workspacesv1.WorkspaceDeployment
		want     []string
	}{
		{name: "routes dropped", old: routedTo("kcm/region", 1), cur: &workspacesv1.WorkspaceDeployment{}, want: []string{"kcm/region"}},
		{name: "moved to another regional cluster", old: routedTo("kcm/region", 1), cur: routedTo("kcm/other", 1), want: []string{"kcm/region"}},
		{name: "inventory emptied", old: routedTo("kcm/region", 2), cur: routedTo("kcm/region", 0), want: []string{"kcm/region"}},
		{name: "unchanged", old: routedTo("kcm/region", 1), cur: routedTo("kcm/region", 1)},
		{name: "never routed", old: &workspacesv1.WorkspaceDeployment{}, cur: routedTo("kcm/region", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			routesLeft{}.Update(context.Background(), event.TypedUpdateEvent[client.Object]{ObjectOld: tt.old, ObjectNew: tt.cur}, q)
			var got []string
			for q.Len() > 0 {
				r, _ := q.Get()
				got = append(got, r.String())
				q.Done(r)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	routesLeft{}.Delete(context.Background(), event.TypedDeleteEvent[client.Object]{Object: routedTo("kcm/region", 1)}, q)
	g.Expect(q.Len()).To(Equal(1), "a deleted workspace's routes left")
}
