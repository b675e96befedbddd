package access

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func listener(name string, protocol gatewayv1.ProtocolType, port int32, host string) gatewayv1.Listener {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: protocol, Port: gatewayv1.PortNumber(port)}
	if host != "" {
		l.Hostname = ptr.To(gatewayv1.Hostname(host))
	}
	return l
}

func gateway(programmed metav1.ConditionStatus, listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "istio-ingressgateway"}}
	gw.Spec.Listeners = listeners
	if programmed != "" {
		gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: programmed, Reason: "Test", Message: "by the test"}}
	}
	return gw
}

func TestReadGateway(t *testing.T) {
	https := listener("https", gatewayv1.HTTPSProtocolType, 443, "*.acme.example.com")
	http := listener("http", gatewayv1.HTTPProtocolType, 80, "*.dev.example.com")
	tcp := func(name string, port int32) gatewayv1.Listener {
		return listener(name, gatewayv1.TCPProtocolType, port, "")
	}
	tests := []struct {
		name    string
		gw      *gatewayv1.Gateway
		want    Tenant
		wantErr string
	}{
		{name: "HTTPS wildcard gives the domain and https",
			gw:   gateway(metav1.ConditionTrue, http, https, tcp("ssh-b", 30023), tcp("ssh-a", 30022)),
			want: Tenant{Domain: "acme.example.com", Scheme: "https", Pool: []Listener{{"ssh-a", 30022}, {"ssh-b", 30023}}}},
		{name: "HTTP wildcard is the fallback",
			gw:   gateway(metav1.ConditionTrue, http),
			want: Tenant{Domain: "dev.example.com", Scheme: "http"}},
		{name: "an HTTPS listener without a wildcard does not count",
			gw:   gateway(metav1.ConditionTrue, listener("exact", gatewayv1.HTTPSProtocolType, 443, "www.example.com"), http),
			want: Tenant{Domain: "dev.example.com", Scheme: "http"}},
		{name: "upper-case host names are lowered",
			gw:   gateway(metav1.ConditionTrue, listener("https", gatewayv1.HTTPSProtocolType, 443, "*.ACME.example.com")),
			want: Tenant{Domain: "acme.example.com", Scheme: "https"}},
		{name: "pool sorts by port, ties by name, and skips other protocols",
			gw: gateway(metav1.ConditionTrue, https, tcp("b", 30000), tcp("a", 30000), tcp("c", 29999),
				listener("udp", gatewayv1.UDPProtocolType, 1, "")),
			want: Tenant{Domain: "acme.example.com", Scheme: "https", Pool: []Listener{{"c", 29999}, {"a", 30000}, {"b", 30000}}}},
		{name: "not programmed", gw: gateway(metav1.ConditionFalse, https), wantErr: "Programmed is False: by the test"},
		{name: "no condition yet", gw: gateway("", https), wantErr: "no Programmed condition yet"},
		{name: "no wildcard listener", gw: gateway(metav1.ConditionTrue, tcp("ssh", 22)), wantErr: "no HTTPS or HTTP listener with a wildcard"},
		{name: "a wildcard inside the domain is refused",
			gw: gateway(metav1.ConditionTrue, listener("x", gatewayv1.HTTPSProtocolType, 443, "*.*.example.com")), wantErr: "wildcard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ReadGateway(tt.gw)
			if tt.wantErr != "" {
				g.Expect(err).To(HaveOccurred())
				g.Expect(errors.Is(err, ErrInfraNotReady)).To(BeTrue())
				g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
				g.Expect(err.Error()).To(HavePrefix("Gateway istio-system/istio-ingressgateway "), "the message says what is wrong")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestRouteReady(t *testing.T) {
	parent := func(ns *string, name string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
		p := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}, Conditions: conds}
		if ns != nil {
			p.ParentRef.Namespace = ptr.To(gatewayv1.Namespace(*ns))
		}
		return p
	}
	cond := func(t string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: "R", Message: "m"}
	}
	gwNS := "istio-system"
	tests := []struct {
		name    string
		parents []gatewayv1.RouteParentStatus
		ready   bool
		msg     string
	}{
		{name: "no status yet", msg: "waiting for the gateway to accept the route"},
		{name: "accepted and resolved", ready: true, parents: []gatewayv1.RouteParentStatus{
			parent(&gwNS, "gw", cond("Accepted", "True"), cond("ResolvedRefs", "True"))}},
		{name: "another gateway's status does not count", msg: "waiting", parents: []gatewayv1.RouteParentStatus{
			parent(&gwNS, "other", cond("Accepted", "True"), cond("ResolvedRefs", "True"))}},
		{name: "a parent without namespace is in the route's namespace", msg: "waiting", parents: []gatewayv1.RouteParentStatus{
			parent(nil, "gw", cond("Accepted", "True"), cond("ResolvedRefs", "True"))}},
		{name: "refs not resolved", msg: "ResolvedRefs=False (R): m", parents: []gatewayv1.RouteParentStatus{
			parent(&gwNS, "gw", cond("Accepted", "True"), cond("ResolvedRefs", "False"))}},
		{name: "not accepted", msg: "Accepted=False", parents: []gatewayv1.RouteParentStatus{
			parent(&gwNS, "gw", cond("Accepted", "False"), cond("ResolvedRefs", "True"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ready, msg := RouteReady(gatewayv1.RouteStatus{Parents: tt.parents}, "ws-a", gwNS, "gw")
			g.Expect(ready).To(Equal(tt.ready))
			g.Expect(msg).To(ContainSubstring(tt.msg))
		})
	}
}
