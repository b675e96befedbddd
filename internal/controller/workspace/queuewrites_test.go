package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/queueview"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestAnAdmissionWritesNoWaiterStatus: n workspaces wait in a cluster's GPU
// queue behind a holder; the holder goes and the head of the queue runs.
// What the API server sees of the waiters that stay is counted: their
// status writes do not grow with the queue (docs/benchmarks.md, "Queue
// positions"), as the same run with twice the waiters shows.
func TestAnAdmissionWritesNoWaiterStatus(t *testing.T) {
	var writes []int
	for _, n := range []int{4, 8} {
		writes = append(writes, waiterWritesPerAdmission(t, n, nil))
	}
	t.Logf("status writes of the waiters that stay, when the head of the queue is admitted: %d with 4 waiting, %d with 8", writes[0], writes[1])
	NewWithT(t).Expect(writes[1]).To(BeNumerically("<=", 1), "at most the new head's reason changes")
}

// TestQueuePositionsOnDemand: a tenant reads its waiting workspaces'
// places in the cluster's queue from Apiary's queue endpoint with its own
// ServiceAccount's token: in order, and moved up once the head is
// admitted, with no status written for it. Another tenant's token is
// refused, as is none.
func TestQueuePositionsOnDemand(t *testing.T) {
	waiterWritesPerAdmission(t, 3, func(stage string, ns string, keys []client.ObjectKey) {
		g := NewWithT(t)
		owner, stranger := builder.TenantToken(t, controllertest.Env.Config, ns, "owner", true), builder.TenantToken(t, controllertest.Env.Config, ns, "stranger", false)
		places, code := queuePositions(t, ns, owner)
		g.Expect(code).To(Equal(http.StatusOK))
		switch stage {
		case "waiting":
			g.Expect(places).To(HaveLen(3))
			for i, p := range places {
				g.Expect(p.Name).To(Equal(keys[i].Name))
				reason := workspacesv1.WaitingBehindOlderReason
				if i == 0 {
					reason = workspacesv1.WaitingForGPUCapacityReason // the head waits for the holder's GPU
				}
				g.Expect(p.Reason).To(Equal(reason))
				g.Expect(p.Queues).To(HaveLen(1))
				g.Expect(p.Queues[0]).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(queueview.ClusterQueue),
					"Name": Equal(ns + "/c1"), "Position": Equal(i + 1), "Length": Equal(3)}))
			}
			g.Expect(places[2].Queues[0].AheadInNamespace).To(Equal([]string{keys[0].Name, keys[1].Name}))
			table := queueCLI(t, ns, owner)
			g.Expect(table).To(MatchRegexp(keys[2].Name + `\s+WaitingBehindOlderWorkspaces\s+0\s+\S+\s+Cluster ` + ns + `/c1\s+3/3\s+` +
				keys[0].Name + "," + keys[1].Name))
		case "admitted":
			g.Expect(places).To(HaveLen(2), "the head runs")
			g.Expect(places[0].Name).To(Equal(keys[1].Name))
			g.Expect(places[0].Queues[0].Position).To(Equal(1))
			g.Expect(places[1].Queues[0].Position).To(Equal(2))
		}
		_, code = queuePositions(t, ns, stranger)
		g.Expect(code).To(Equal(http.StatusForbidden), "a subject that may not list the namespace's workspaces")
		_, code = queuePositions(t, ns, "")
		g.Expect(code).To(Equal(http.StatusUnauthorized), "no token")
		_, code = queuePositions(t, "default", owner)
		g.Expect(code).To(Equal(http.StatusForbidden), "another namespace")
	})
}

// queuePositions reads a namespace's places from a queue server reading the
// API server, as the manager's reads its cache.
func queuePositions(t *testing.T, ns, token string) ([]queueview.Place, int) {
	g := NewWithT(t)
	ts := queueServer(t)
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/namespaces/"+ns+"/queue", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.Client().Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var places []queueview.Place
	if resp.StatusCode == http.StatusOK {
		g.Expect(json.NewDecoder(resp.Body).Decode(&places)).To(Succeed())
	}
	return places, resp.StatusCode
}

// queueServer is a queue positions server over TLS, reading the API
// server, as the manager's reads its cache.
func queueServer(t *testing.T) *httptest.Server {
	srv := &queueview.Server{Reader: controllertest.Env.Client, Config: controllertest.Env.Config, Log: logr.Discard()}
	h, err := srv.Handler()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ts := httptest.NewTLSServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// queueCLI runs apiary queue with a kubeconfig of the token, its context in ns.
func queueCLI(t *testing.T, ns, token string) string {
	g := NewWithT(t)
	path := builder.Kubeconfig(t, controllertest.Env.Config, token, ns)
	var out, errOut bytes.Buffer
	code := queueview.Main([]string{"--kubeconfig", path, "--server", queueServer(t).URL, "--insecure-skip-tls-verify"}, &out, &errOut)
	g.Expect(code).To(Equal(0), errOut.String())
	return out.String()
}

func waiterWritesPerAdmission(t *testing.T, n int, check func(stage, ns string, keys []client.ObjectKey)) int {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, fmt.Sprintf("qw%d", n))
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "T4-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-t4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	holder := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "holder"), "g-"+ns, "c1", model, 1))
	controllertest.EventuallyRunning(t, holder)
	var keys []client.ObjectKey
	for i := range n {
		keys = append(keys, controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, fmt.Sprintf("w%d", i)), "g-"+ns, "c1", model, 1)))
		time.Sleep(1100 * time.Millisecond) // one queue position per creation second
	}
	for _, k := range keys {
		controllertest.EventuallyPhase(t, k, workspacesv1.PhaseWaiting)
	}
	time.Sleep(2 * time.Second) // the waits settle
	if check != nil {
		check("waiting", ns, keys)
	}
	mark := controllertest.Requests.Mark()
	controllertest.DeleteWorkspace(t, holder)
	controllertest.EventuallyRunning(t, keys[0])
	time.Sleep(3 * time.Second) // anything still in flight is counted too
	writes := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool {
		return r.Side == "management" && r.Namespace == ns && r.Resource == "workspacedeployments/status" &&
			r.Verb != "GET" && r.Name != keys[0].Name && r.Name != holder.Name
	})
	t.Logf("%d waiting: %v", n, controllertest.Tally(writes))
	if check != nil {
		check("admitted", ns, keys)
	}
	return len(writes)
}
