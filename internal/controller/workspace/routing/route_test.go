package routing

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
)

// TestMarkRoutes checks which reason RoutesReady reports when endpoints
// are not ready for different causes, and when the workspace is looked at again.
func TestMarkRoutes(t *testing.T) {
	web := access.Route{Endpoint: workspacesv1.AccessEndpoint{Name: "web"}, URL: "https://w.d"}
	exhausted := access.Route{Endpoint: workspacesv1.AccessEndpoint{Name: "ssh"}, Problem: "port pool exhausted", Exhausted: true}
	noPool := access.Route{Endpoint: workspacesv1.AccessEndpoint{Name: "db"}, Problem: "no TCP listeners", Infra: true}
	badName := access.Route{Endpoint: workspacesv1.AccessEndpoint{Name: "long"}, Problem: "not a DNS label"}
	taken := access.Route{Endpoint: workspacesv1.AccessEndpoint{Name: "api"}, HostTaken: true,
		Problem: access.HeldBy("nb-api.example.com", "workspace team/nb")}
	entry := func(r access.Route, ready bool) workspacesv1.AccessEntry {
		msg := r.Problem
		if msg == "" && !ready {
			msg = "waiting for the gateway to accept the route"
		}
		return workspacesv1.AccessEntry{Name: r.Endpoint.Name, URL: r.URL, Ready: ready, Message: msg}
	}
	tests := []struct {
		name    string
		routes  []access.Route
		ready   []bool
		block   *routeBlock
		reason  string
		wait    time.Duration
		message string
	}{
		{name: "all ready", routes: []access.Route{web}, ready: []bool{true}, reason: workspacesv1.RoutesReadyReason},
		{name: "waiting for the gateway polls soon", routes: []access.Route{web}, ready: []bool{false},
			reason: workspacesv1.RoutingInProgressReason, wait: routePollMin, message: "web: waiting for the gateway"},
		{name: "exhaustion wins over waiting, the wait stays short", routes: []access.Route{web, exhausted}, ready: []bool{false, false},
			reason: workspacesv1.PortPoolExhaustedReason, wait: routePollMin, message: "ssh: port pool exhausted"},
		{name: "exhaustion alone waits long", routes: []access.Route{web, exhausted}, ready: []bool{true, false},
			reason: workspacesv1.PortPoolExhaustedReason, wait: routeInfraResync},
		{name: "a host name another holds waits long", routes: []access.Route{web, taken}, ready: []bool{true, false},
			reason: workspacesv1.HostNameTakenReason, wait: routeInfraResync, message: "api: host name nb-api.example.com is held by workspace team/nb"},
		{name: "a taken host name wins over exhaustion", routes: []access.Route{exhausted, taken}, ready: []bool{false, false},
			reason: workspacesv1.HostNameTakenReason, wait: routeInfraResync, message: "ssh: port pool exhausted; api: host name"},
		{name: "infrastructure", routes: []access.Route{noPool}, ready: []bool{false},
			reason: workspacesv1.RoutingInfraNotReadyReason, wait: routeInfraResync},
		{name: "a bad endpoint is an error", routes: []access.Route{badName, exhausted, noPool}, ready: []bool{false, false, false},
			reason: workspacesv1.RoutingErrorReason, wait: routeInfraResync, message: "long: not a DNS label"},
		{name: "a delivery error is reported first", routes: []access.Route{web}, ready: []bool{true},
			block: routingError("delivering failed"), reason: workspacesv1.RoutingErrorReason, wait: routeErrorResync, message: "delivering failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			var entries []workspacesv1.AccessEntry
			for i, r := range tt.routes {
				entries = append(entries, entry(r, tt.ready[i]))
			}
			wait := markRoutes(obj, tt.routes, entries, tt.block)
			c := obj.Status.Conditions[0]
			g.Expect(c.Type).To(Equal(workspacesv1.RoutesReadyCondition))
			g.Expect(c.Reason).To(Equal(tt.reason))
			g.Expect(c.Status == metav1.ConditionTrue).To(Equal(tt.reason == workspacesv1.RoutesReadyReason))
			g.Expect(c.Message).To(ContainSubstring(tt.message))
			g.Expect(wait).To(Equal(tt.wait))
		})
	}
}
