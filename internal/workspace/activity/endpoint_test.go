package activity

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The endpoint source is tested against an httptest server playing the
// child API server's Service proxy: a real API server (envtest's) refuses to
// proxy to loopback endpoints, so it cannot reach a server of the test.
// envtest_test.go checks the same path against a real API server, up to its
// proxy's answer for a Service without endpoints.

// token holds what a query must escape.
const token = "tok+en/with&odd=chars %and-length"

const managerCredential = "manager-credential"

// restConfigsFunc is a RESTConfigs of a function.
type restConfigsFunc func(ctx context.Context, cd types.NamespacedName) (*rest.Config, error)

func (f restConfigsFunc) RESTConfig(ctx context.Context, cd types.NamespacedName) (*rest.Config, error) {
	return f(ctx, cd)
}

// fakeProxy is a TLS server standing for a child's API server, handing
// every request that carries the manager's credential to serve.
type fakeProxy struct {
	*httptest.Server
	requests atomic.Int32
	conns    atomic.Int32
	serve    atomic.Pointer[http.HandlerFunc]
	// svcType is the type of every Service it serves; ClusterIP when empty.
	svcType atomic.Value
}

func startProxy(t *testing.T, serve http.HandlerFunc) *fakeProxy {
	t.Helper()
	p := &fakeProxy{}
	p.serve.Store(&serve)
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+managerCredential {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if !strings.Contains(r.URL.Path, "/proxy/") { // the Service, read before its proxy
			typ, _ := p.svcType.Load().(string)
			if typ == "" {
				typ = "ClusterIP"
			}
			_, _ = w.Write([]byte(`{"kind":"Service","spec":{"type":"` + typ + `"}}`))
			return
		}
		(*p.serve.Load())(w, r)
	}))
	p.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}
	p.StartTLS()
	t.Cleanup(p.Close)
	return p
}

// source returns an Endpoint reaching the proxy under prefix for cluster
// cd-1, with the manager's credential.
func (p *fakeProxy) source(prefix string) *Endpoint {
	return p.sourceWith(prefix, func() string { return managerCredential })
}

// sourceWith is source with the credential credential() gives at each probe.
func (p *fakeProxy) sourceWith(prefix string, credential func() string) *Endpoint {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
	return &Endpoint{Clusters: restConfigsFunc(func(_ context.Context, cd types.NamespacedName) (*rest.Config, error) {
		if cd.Name != "cd-1" {
			return nil, errors.New("cluster " + cd.String() + ": kubeconfig not found")
		}
		// A dialer, as a ServerPolicy with CIDRs sets: client-go then
		// shares no transport between configs.
		return &rest.Config{Host: p.URL + prefix, BearerToken: credential(), TLSClientConfig: rest.TLSClientConfig{CAData: ca},
			Dial: (&net.Dialer{}).DialContext}, nil
	})}
}

func jupyterTarget() Target {
	return Target{Cluster: types.NamespacedName{Namespace: "team-a", Name: "cd-1"}, Namespace: "ws-nb", Service: "nb-jupyter",
		Port: 8888, Format: JupyterStatus, Token: token}
}

func TestEndpointAsksThroughTheServiceProxy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var got *http.Request
	p := startProxy(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		switch r.URL.Path {
		case "/api/v1/namespaces/ws-nb/services/nb-jupyter:8888/proxy/api/status",
			"/k8s/clusters/c-1/api/v1/namespaces/ws-nb/services/nb-jupyter:8888/proxy/api/status":
			_, _ = w.Write([]byte(`{"started":"2026-12-03T09:00:00Z","last_activity":"2026-12-03T11:00:00.5Z","connections":0,"kernels":1}`))
		case "/api/v1/namespaces/ws-nb/services/nb-code:8080/proxy/healthz":
			_, _ = w.Write([]byte(`{"status":"alive","lastHeartbeat":1796295600000}`))
		default:
			http.NotFound(w, r)
		}
	})

	obs, err := p.source("").Observe(ctx, jupyterTarget(), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.Known).To(BeTrue())
	g.Expect(obs.LastActivity).To(Equal(time.Date(2026, 12, 3, 11, 0, 0, 5e8, time.UTC)))
	g.Expect(got.Method).To(Equal(http.MethodGet))
	g.Expect(got.URL.RawQuery).To(Equal("token=" + url.QueryEscape(token)))
	g.Expect(got.URL.Query().Get("token")).To(Equal(token))

	_, err = p.source("/k8s/clusters/c-1").Observe(ctx, jupyterTarget(), now)
	g.Expect(err).NotTo(HaveOccurred(), "an API server URL with a path keeps it")

	code := Target{Cluster: jupyterTarget().Cluster, Namespace: "ws-nb", Service: "nb-code", Port: 8080, Format: CodeServerHealthz}
	obs, err = p.source("").Observe(ctx, code, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.LastActivity).To(BeTemporally("==", now.Add(-time.Hour)))
	g.Expect(got.URL.RawQuery).To(BeEmpty(), "no token, no query")
}

func TestEndpointFailures(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer elsewhere.Close()
	for name, c := range map[string]struct {
		serve http.HandlerFunc
		want  string
		is    error
	}{
		"a workspace's error page": {want: "HTTP 503", serve: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("echo: " + r.URL.RawQuery + " \x1b[31m"))
		}},
		"a redirect": {want: "HTTP 302", serve: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/login?"+r.URL.RawQuery, http.StatusFound)
		}},
		"too large": {is: ErrTooLarge, serve: func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // no Content-Length: read up to the bound
			_, _ = w.Write([]byte(`{"last_activity":"` + strings.Repeat("9", MaxBody) + `"}`))
		}},
		"too large, said": {is: ErrTooLarge, serve: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000000")
			_, _ = w.Write([]byte(`{}`))
		}},
		"slow": {want: "timed out", is: context.DeadlineExceeded, serve: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}},
		"not JSON": {is: ErrMalformed, serve: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>" + token)) }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := startProxy(t, c.serve)
			src := p.source("")
			src.Timeout = 300 * time.Millisecond
			start := time.Now()
			obs, err := src.Observe(ctx, jupyterTarget(), now)
			g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
			g.Expect(obs).To(BeZero())
			g.Expect(err).To(HaveOccurred())
			if c.want != "" {
				g.Expect(err.Error()).To(ContainSubstring(c.want))
			}
			if c.is != nil {
				g.Expect(err).To(MatchError(c.is))
			}
			g.Expect(err.Error()).To(ContainSubstring("service ws-nb/nb-jupyter:8888"))
			for _, form := range []string{token, url.QueryEscape(token), "tok"} {
				g.Expect(err.Error()).NotTo(ContainSubstring(form))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("\x1b"))
		})
	}
	NewWithT(t).Expect(hits.Load()).To(BeZero(), "a redirect is not followed")
}

func TestEndpointRefusesTargetsBeforeAsking(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	for name, mutate := range map[string]func(*Target){
		"namespace with a slash":  func(t *Target) { t.Namespace = "ws-a/../kube-system" },
		"service not a DNS label": func(t *Target) { t.Service = "Svc" },
		"service with a colon":    func(t *Target) { t.Service = "svc:80" },
		"port 0":                  func(t *Target) { t.Port = 0 },
		"port too high":           func(t *Target) { t.Port = 70000 },
		"dot-dot path":            func(t *Target) { t.Path = "api/../../../../secrets" },
		"dot path":                func(t *Target) { t.Path = "./api" },
		"a query in the path":     func(t *Target) { t.Path = "api/status?token=x" },
		"an escape in the path":   func(t *Target) { t.Path = "api/%2e%2e/x" },
		"an absolute URL":         func(t *Target) { t.Path = "http://evil.example/" },
		"a long path":             func(t *Target) { t.Path = strings.Repeat("a", maxPath+1) },
		"a format it cannot ask":  func(t *Target) { t.Format = PrometheusGPU },
		"an unknown cluster":      func(t *Target) { t.Cluster.Name = "cd-2" },
	} {
		g := NewWithT(t)
		tgt := jupyterTarget()
		mutate(&tgt)
		_, err := p.source("").Observe(ctx, tgt, now)
		g.Expect(err).To(HaveOccurred(), name)
		g.Expect(err.Error()).NotTo(ContainSubstring(token), name)
	}
	NewWithT(t).Expect(p.requests.Load()).To(BeZero())

	g := NewWithT(t)
	path, err := ProxyPath(Target{Namespace: "ws-a", Service: "s", Port: 80, Format: CodeServerHealthz, Path: "/custom/path/"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(path).To(Equal("/api/v1/namespaces/ws-a/services/s:80/proxy/custom/path/"))
}

func TestEndpointKeepsAClientPerClusterConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := startProxy(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"last_activity":"2026-12-03T11:00:00Z"}`))
	})
	credential := managerCredential
	src := p.sourceWith("", func() string { return credential })
	for range 3 {
		_, err := src.Observe(ctx, jupyterTarget(), now)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(p.conns.Load()).To(Equal(int32(1)), "probes share the cluster's connection")

	credential = "rotated"
	_, err := src.Observe(ctx, jupyterTarget(), now)
	g.Expect(err).To(MatchError(ContainSubstring("HTTP 401")), "a changed config gives a new client, with the new credential")
	g.Expect(p.conns.Load()).To(Equal(int32(2)))
}

func TestEndpointRefusesAnExternalNameService(t *testing.T) {
	g := NewWithT(t)
	var proxied atomic.Int32
	p := startProxy(t, func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		_, _ = w.Write([]byte(`{"last_activity":"2026-12-03T11:00:00Z"}`))
	})
	p.svcType.Store("ExternalName")
	_, err := p.source("").Observe(context.Background(), jupyterTarget(), now)
	var refused *RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("ExternalName"))
	g.Expect(proxied.Load()).To(BeZero(), "the proxy is not asked")

	obs := (&Prober{Sources: map[Format]Source{JupyterStatus: p.source("")}}).Observe(context.Background(), jupyterTarget(), now)
	g.Expect(obs.Known).To(BeFalse())
	g.Expect(obs.Refused).To(BeTrue())
	g.Expect(obs.Detail).To(ContainSubstring("refused: the Service is of type ExternalName"))
}
