// Package mesh_test proves mesh enrolment, per-child waypoints and the
// watched tenant Gateway end to end: a management control plane with the
// k0rdent stand-in, a regional and a child control plane with the Gateway
// API's CRDs, and an Apiary manager started by each test with its own mesh
// flags, tenant Gateway and waypoint namespace, so that tests can restart it
// with another mesh mode. Apiary reaches the regional and the child cluster
// through proxies that count its requests, to show that a routed workspace
// at steady state costs none.
package mesh_test

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

const timeout = 60 * time.Second

// soon bounds how long a change of a Gateway may take to reach a
// workspace: far below the five minutes a resync would take.
const soon = 15 * time.Second

// regionalAnnotation on a ClusterDeployment gives it the regional control
// plane's kubeconfig; the others get the child's.
const regionalAnnotation = world.RegionalAnnotation

var (
	env               *testenv.Environment
	regional, child   *testenv.Environment
	regionalC, childC client.Client // with the Gateway API's types
	// regionalProxy and childProxy stand between Apiary and those clusters.
	regionalProxy, childProxy *counter
	// mgmtRequests counts Apiary's requests to the management cluster.
	mgmtRequests atomic.Int64
)

// TestMain starts the world; Apiary reaches the regional and the child
// cluster through the counting proxies.
func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "mesh", Management: true, ChildGateway: true, Regional: true, StandIn: standin.InWorld()},
		func(r *world.Running) error {
			env, regional, regionalC, child, childC = r.Management, r.Regional, r.RegionalClient, r.Child, r.ChildClient
			var err error
			if regionalProxy, err = newCounter(regional.Config); err != nil {
				return fmt.Errorf("regional proxy: %w", err)
			}
			r.Defer(regionalProxy.srv.Close)
			if childProxy, err = newCounter(child.Config); err != nil {
				return fmt.Errorf("child proxy: %w", err)
			}
			r.Defer(childProxy.srv.Close)
			r.Route(world.RouteRegional, regionalProxy.kubeconfig())
			r.Route(world.RouteChild, childProxy.kubeconfig())
			return nil
		})
}

// flags are the mesh and access flags of one manager.
type flags struct {
	mode              string
	waypoints         bool
	waypointNamespace string
	gateway           client.ObjectKey
}

// options are the manager's options with flags; its requests to the
// management cluster are counted.
func (f flags) options() manager.Options {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countRequests(rt, &mgmtRequests) })
	return manager.Options{
		RestConfig:                 cfg,
		InventoryInterval:          time.Hour,
		NoCrossNamespaceRefs:       true,
		WorkspaceGatewayName:       f.gateway.Name,
		WorkspaceGatewayNamespace:  f.gateway.Namespace,
		WorkspaceMeshMode:          f.mode,
		WorkspaceWaypointEnabled:   f.waypoints,
		WorkspaceWaypointNamespace: f.waypointNamespace,
	}
}

// apiary starts the manager of one test, stopped when the test ends (after
// the test's workspaces are gone); RestartWith restarts it with other flags.
func apiary(t *testing.T, f flags) *managertest.Manager {
	t.Helper()
	return managertest.Start(t, f.options())
}

// counter is a TLS reverse proxy in front of a control plane that counts
// the requests of Apiary's cluster clients (by their user agent), watches
// aside. The kubeconfig it hands out reaches the control plane through it
// as an administrator.
type counter struct {
	srv      *httptest.Server
	requests atomic.Int64
}

func newCounter(cfg *rest.Config) (*counter, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	c := &counter{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1,
	}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.UserAgent(), "apiary-childcluster") && r.URL.Query().Get("watch") != "true" {
			c.requests.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	c.srv.StartTLS()
	return c, nil
}

func (c *counter) kubeconfig() []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + c.srv.URL + `
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})) + `
users:
- name: u
  user: {}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`)
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func countRequests(next http.RoundTripper, n *atomic.Int64) http.RoundTripper {
	return &countingTransport{next: next, n: n}
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}
