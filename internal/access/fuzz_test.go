package access

import (
	"net/url"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// FuzzReadGateway reads Gateways with arbitrary listener host names: the
// tenant domain it takes is always a DNS subdomain without wildcard, the
// scheme https or http, the pool sorted TCP listeners.
func FuzzReadGateway(f *testing.F) {
	for _, s := range []struct {
		host     string
		protocol string
		port     int32
	}{
		{"*.acme.example.com", "HTTPS", 443}, {"*.dev.local", "HTTP", 80}, {"www.example.com", "HTTPS", 443},
		{"*.*.x", "HTTPS", 443}, {"*.", "HTTP", 80}, {"", "TCP", 30022}, {"*.ÄÖ.de", "HTTPS", 443}, {"*.a..b", "HTTP", 1},
	} {
		f.Add(s.host, s.protocol, s.port, "ssh", int32(30000))
	}
	f.Fuzz(func(t *testing.T, host, protocol string, port int32, tcpName string, tcpPort int32) {
		gw := gateway(metav1.ConditionTrue,
			listener("a", gatewayv1.ProtocolType(protocol), port, host),
			listener(tcpName, gatewayv1.TCPProtocolType, tcpPort, ""))
		tenant, err := ReadGateway(gw)
		if err != nil {
			return
		}
		if tenant.Scheme != "https" && tenant.Scheme != "http" {
			t.Fatalf("scheme %q", tenant.Scheme)
		}
		if errs := validation.IsDNS1123Subdomain(tenant.Domain); len(errs) > 0 || strings.Contains(tenant.Domain, "*") {
			t.Fatalf("domain %q from host %q: %v", tenant.Domain, host, errs)
		}
		if !sort.SliceIsSorted(tenant.Pool, func(i, j int) bool { return tenant.Pool[i].Port < tenant.Pool[j].Port }) {
			t.Fatalf("pool not sorted: %v", tenant.Pool)
		}
		for _, l := range tenant.Pool {
			if l.Port <= 0 || l.Name == "" {
				t.Fatalf("pool holds %v", l)
			}
		}
		// Every URL derived from it parses, with the domain as its host.
		routes := Plan(PlanInput{Workspace: "ws", Release: "r", Tenant: tenant,
			Endpoints: []workspacesv1.AccessEndpoint{{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 80}}})
		if routes[0].Routable() {
			u, err := url.Parse(routes[0].URL)
			if err != nil || u.Host != "ws."+tenant.Domain {
				t.Fatalf("URL %q: %v", routes[0].URL, err)
			}
		}
	})
}

// FuzzHostname derives host names from arbitrary names: a host name it
// returns is a DNS subdomain whose first label is a DNS label.
func FuzzHostname(f *testing.F) {
	f.Add("nb", "web", true, "acme.example.com")
	f.Add("nb", "tensorboard", false, "acme.example.com")
	f.Add(strings.Repeat("a", 60), "web", false, "x.y")
	f.Add("Nb", "", false, "")
	f.Add("a", "b", false, strings.Repeat("d.", 130))
	f.Fuzz(func(t *testing.T, workspace, endpoint string, primary bool, domain string) {
		host, err := Hostname(workspace, endpoint, primary, domain)
		if err != nil {
			if host != "" {
				t.Fatalf("error %v with host %q", err, host)
			}
			return
		}
		label, _, _ := strings.Cut(host, ".")
		if len(validation.IsDNS1123Label(label)) > 0 || len(validation.IsDNS1123Subdomain(host)) > 0 {
			t.Fatalf("Hostname(%q, %q, %v, %q) = %q is not valid", workspace, endpoint, primary, domain, host)
		}
		if primary && label != workspace || !primary && label != workspace+"-"+endpoint {
			t.Fatalf("Hostname(%q, %q, %v, %q) = %q has the wrong first label", workspace, endpoint, primary, domain, host)
		}
	})
}
