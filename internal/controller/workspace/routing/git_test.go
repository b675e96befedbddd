package routing

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// TestRoutesAwaitFlux checks what routes delivered through Git wait for
// before they are read back, in the cases that need no Flux object.
func TestRoutesAwaitFlux(t *testing.T) {
	tests := []struct {
		name     string
		delivery *commonv1.DeliveryStatus
		want     string
	}{
		{name: "direct mode", delivery: &commonv1.DeliveryStatus{Mode: delivery.ModeDirect, Digest: "d1"}, want: ""},
		{name: "changes not committed yet", delivery: &commonv1.DeliveryStatus{Mode: delivery.ModeGit, Digest: "d0", Revision: "abc"},
			want: "waiting for the routes to be committed to Git"},
		{name: "no commit yet", delivery: &commonv1.DeliveryStatus{Mode: delivery.ModeGit, Digest: "d1"},
			want: "waiting for the routes to be committed to Git"},
		{name: "commit known to be applied", delivery: &commonv1.DeliveryStatus{Mode: delivery.ModeGit, Digest: "d1", Revision: "abc", SyncedCommit: "abc"},
			want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Router{}
			obj := &workspacesv1.WorkspaceDeployment{}
			obj.Status.Routes = &workspacesv1.WorkspaceRoutesStatus{Delivery: tt.delivery}
			g.Expect(r.routesAwaitFlux(context.Background(), obj, &regionalView{}, "d1")).To(Equal(tt.want))
		})
	}
}

// TestRoutesAwaiting reports routes waiting for Flux with their URLs, not
// ready, RoutingInProgress, and only a safety-net requeue.
func TestRoutesAwaiting(t *testing.T) {
	g := NewWithT(t)
	r := &Router{}
	obj := &workspacesv1.WorkspaceDeployment{}
	routes := []access.Route{
		{Endpoint: workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP}, URL: "https://nb.d"},
		{Endpoint: workspacesv1.AccessEndpoint{Name: "ssh", Protocol: workspacesv1.AccessProtocolSSH}, Problem: "port pool exhausted", Exhausted: true},
	}
	res := r.routesAwaiting(obj, routes, "waiting for Flux Kustomization ns/apiary-routes-r to apply commit abc")
	g.Expect(res).To(BeNumerically(">=", routeInfraResync*9/10), "a safety-net requeue")
	g.Expect(obj.Status.Access).To(HaveLen(2))
	g.Expect(obj.Status.Access[0].URL).To(Equal("https://nb.d"))
	g.Expect(obj.Status.Access[0].Ready).To(BeFalse())
	g.Expect(obj.Status.Access[0].Message).To(ContainSubstring("apply commit abc"))
	g.Expect(obj.Status.Access[1].Message).To(Equal("port pool exhausted"))
	// The worst cause names the condition's reason.
	g.Expect(conditions.GetReason(obj, workspacesv1.RoutesReadyCondition)).To(Equal(workspacesv1.PortPoolExhaustedReason))
	g.Expect(conditions.GetMessage(obj, workspacesv1.RoutesReadyCondition)).To(ContainSubstring("web: waiting for Flux"))
}
