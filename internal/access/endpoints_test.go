package access

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func ep(name string, protocol workspacesv1.AccessProtocol, port int32) workspacesv1.AccessEndpoint {
	return workspacesv1.AccessEndpoint{Name: name, Protocol: protocol, Port: port}
}

func TestPlan(t *testing.T) {
	tenant := Tenant{Domain: "acme.example.com", Scheme: "https", Pool: []Listener{{"ssh-0", 30022}, {"ssh-1", 30023}}}
	http, tcp, ssh := workspacesv1.AccessProtocolHTTP, workspacesv1.AccessProtocolTCP, workspacesv1.AccessProtocolSSH
	type want struct{ url, svc, problem string }
	tests := []struct {
		name   string
		in     PlanInput
		want   []want
		exhaus []bool
	}{
		{
			name: "one HTTP endpoint is the workspace's host",
			in:   PlanInput{Workspace: "nb", Release: "wsd-c1-nb", Endpoints: []workspacesv1.AccessEndpoint{ep("web", http, 8888)}, Tenant: tenant},
			want: []want{{url: "https://nb.acme.example.com", svc: "wsd-c1-nb-web"}},
		},
		{
			name: "further HTTP endpoints get <workspace>-<endpoint>",
			in: PlanInput{Workspace: "nb", Release: "wsd-c1-nb", Tenant: tenant, Gateway: "istio-system/gw", Endpoints: []workspacesv1.AccessEndpoint{
				ep("web", http, 8888), ep("ssh", ssh, 22), ep("tensorboard", http, 6006), ep("api", http, 8000)}},
			want: []want{
				{url: "https://nb.acme.example.com", svc: "wsd-c1-nb-web"},
				{svc: "wsd-c1-nb-ssh", problem: "port pool exhausted: all 2 TCP listeners of Gateway istio-system/gw are in use"},
				{url: "https://nb-tensorboard.acme.example.com", svc: "wsd-c1-nb-tensorboard"},
				{url: "https://nb-api.acme.example.com", svc: "wsd-c1-nb-api"},
			},
			exhaus: []bool{false, true, false, false},
		},
		{
			name: "TCP and SSH endpoints take their pool port and their protocol as scheme",
			in: PlanInput{Workspace: "nb", Release: "r", Tenant: tenant, Gateway: "istio-system/gw",
				Endpoints: []workspacesv1.AccessEndpoint{ep("ssh", ssh, 22), ep("db", tcp, 5432)},
				Ports:     map[string]Listener{"ssh": {"ssh-1", 30023}, "db": {"ssh-0", 30022}}},
			want: []want{{url: "ssh://acme.example.com:30023", svc: "r-ssh"}, {url: "tcp://acme.example.com:30022", svc: "r-db"}},
		},
		{
			name: "serviceName overrides the conventional name",
			in: PlanInput{Workspace: "hub", Release: "r", Tenant: tenant, Endpoints: []workspacesv1.AccessEndpoint{
				{Name: "web", Protocol: http, Port: 80, ServiceName: "proxy-public"}}},
			want: []want{{url: "https://hub.acme.example.com", svc: "proxy-public"}},
		},
		{
			name: "a host name label over 63 characters fails that endpoint only",
			in: PlanInput{Workspace: strings.Repeat("w", 50), Release: "r", Tenant: tenant, Endpoints: []workspacesv1.AccessEndpoint{
				ep("web", http, 80), ep(strings.Repeat("e", 20), http, 81)}},
			want: []want{
				{url: "https://" + strings.Repeat("w", 50) + ".acme.example.com", svc: "r-web"},
				{svc: "r-" + strings.Repeat("e", 20), problem: "is not a DNS label of at most 63 characters"},
			},
		},
		{
			name: "a Service name over 63 characters asks for serviceName",
			in: PlanInput{Workspace: "nb", Release: strings.Repeat("r", 53), Tenant: tenant, Endpoints: []workspacesv1.AccessEndpoint{
				ep("notebook-ui", http, 80)}},
			want: []want{{svc: strings.Repeat("r", 53) + "-notebook-ui", problem: "set serviceName on the endpoint"}},
		},
		{
			name: "no pool",
			in: PlanInput{Workspace: "nb", Release: "r", Gateway: "istio-system/gw", Tenant: Tenant{Domain: "d.example", Scheme: "https"},
				Endpoints: []workspacesv1.AccessEndpoint{ep("ssh", ssh, 22)}},
			want: []want{{svc: "r-ssh", problem: "Gateway istio-system/gw has no TCP listeners"}},
		},
		{
			name: "no TCPRoute kind fails TCP endpoints, not HTTP ones",
			in: PlanInput{Workspace: "nb", Release: "r", Tenant: tenant, NoTCPRoutes: "TCPRoute is not served",
				Endpoints: []workspacesv1.AccessEndpoint{ep("web", http, 80), ep("ssh", ssh, 22)},
				Ports:     map[string]Listener{"ssh": {"ssh-0", 30022}}},
			want: []want{{url: "https://nb.acme.example.com", svc: "r-web"}, {svc: "r-ssh", problem: "TCPRoute is not served"}},
		},
		{
			name: "a host name another holds fails that endpoint only",
			in: PlanInput{Workspace: "nb", Release: "r", Tenant: tenant, HostsHeld: map[string]string{"nb-api.acme.example.com": "workspace team/nb-api"},
				Endpoints: []workspacesv1.AccessEndpoint{ep("web", http, 80), ep("api", http, 81)}},
			want: []want{{url: "https://nb.acme.example.com", svc: "r-web"},
				{svc: "r-api", problem: "host name nb-api.acme.example.com is held by workspace team/nb-api"}},
		},
		{
			name: "an HTTP scheme comes from an HTTP listener",
			in: PlanInput{Workspace: "nb", Release: "r", Tenant: Tenant{Domain: "dev.local", Scheme: "http"},
				Endpoints: []workspacesv1.AccessEndpoint{ep("web", http, 80)}},
			want: []want{{url: "http://nb.dev.local", svc: "r-web"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Plan(tt.in)
			g.Expect(got).To(HaveLen(len(tt.want)))
			for i, w := range tt.want {
				g.Expect(got[i].Endpoint).To(Equal(tt.in.Endpoints[i]))
				g.Expect(got[i].URL).To(Equal(w.url), "endpoint %d", i)
				g.Expect(got[i].ServiceName).To(Equal(w.svc), "endpoint %d", i)
				g.Expect(got[i].Routable()).To(Equal(w.problem == ""), "endpoint %d: %s", i, got[i].Problem)
				if w.problem != "" {
					g.Expect(got[i].Problem).To(ContainSubstring(w.problem))
				}
				if tt.exhaus != nil {
					g.Expect(got[i].Exhausted).To(Equal(tt.exhaus[i]))
				}
				infra := strings.Contains(w.problem, "no TCP listeners") || strings.Contains(w.problem, "not served")
				g.Expect(got[i].Infra).To(Equal(infra), "endpoint %d", i)
				g.Expect(got[i].HostTaken).To(Equal(strings.Contains(w.problem, "is held by")), "endpoint %d", i)
				g.Expect(got[i].Hostname == "").To(Equal(got[i].URL == "" || !strings.HasPrefix(got[i].URL, "http")), "endpoint %d", i)
			}
		})
	}
}

func TestTCPEndpoints(t *testing.T) {
	g := NewWithT(t)
	got := TCPEndpoints([]workspacesv1.AccessEndpoint{
		ep("web", workspacesv1.AccessProtocolHTTP, 80), ep("ssh", workspacesv1.AccessProtocolSSH, 22), ep("db", workspacesv1.AccessProtocolTCP, 5432)})
	g.Expect(got).To(Equal([]string{"ssh", "db"}))
}
