// Package failover_test measures how long Apiary's work stops when the
// leader of two replicas goes: the standby's time to take the Lease over
// and reconcile a workspace created at that moment, for a leader killed
// (SIGKILL, as a lost node: the Lease runs out) and one stopped (SIGTERM,
// as a rollout or a drain: the Lease is released). It prints the figures
// (docs/operations.md, High availability) and asserts only that the
// standby takes over. It runs only when APIARY_FAILOVER=1 is set, so make
// test skips it: it waits out a Lease.
package failover_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
)

// EnvRun turns the test on.
const EnvRun = "APIARY_FAILOVER"

const (
	leaseName = "apiary-failover"
	timeout   = 2 * time.Minute
	poll      = 100 * time.Millisecond
)

var (
	env                      *testenv.Environment
	binary, kubeconfig, work string
)

func TestMain(m *testing.M) {
	if os.Getenv(EnvRun) != "1" {
		fmt.Printf("failover: skipped; set %s=1 to measure\n", EnvRun)
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	var err error
	if work, err = os.MkdirTemp("", "apiary-failover-"); err != nil {
		return fail("creating a folder", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	if binary, err = world.BuildManager(work); err != nil {
		return fail("building", err)
	}
	clusters, err := managertest.StartClusters()
	if err != nil {
		return fail("starting the clusters", err)
	}
	defer clusters.Stop()
	env = clusters.Management
	admin, err := env.Kubeconfig()
	if err != nil {
		return fail("management kubeconfig", err)
	}
	kubeconfig = filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, admin, 0o600); err != nil {
		return fail("writing the kubeconfig", err)
	}
	return m.Run()
}

// replica starts a manager with leader election on the Lease leaseName in
// ns, with controller-runtime's default timings (a 15 s Lease, renewed
// every 2 s), as the chart runs it.
func replica(t *testing.T, ns, name string) *world.Process {
	t.Helper()
	p, err := world.StartProcess(binary, filepath.Join(work, ns+"-"+name+".log"),
		"--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--crd-check-interval=1s", "--gpu-inventory-interval=1m",
		"--leader-elect=true", "--leader-election-namespace="+ns, "--leader-election-id="+leaseName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// holder is the Lease's holder, "" when it has none.
func holder(ns string) string {
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestLeaderFailover: two replicas, the leader running a workspace. The
// leader goes; a workspace created at that moment is reconciled (Running)
// by the standby. The time from the leader's end to the new holder of the
// Lease, and to the workspace's Running, is printed for both ways to go.
func TestLeaderFailover(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(p *world.Process)
	}{
		{"SIGKILL (lost node)", func(p *world.Process) { _ = p.Kill() }},
		{"SIGTERM (rollout, drain)", func(p *world.Process) { _ = p.Stop() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t, "failover")
			builder.ReadyCluster(t, env.Client, ns, "c1")
			class := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-" + ns},
				Spec: workspacesv1.WorkspaceClassSpec{DisplayName: "failover",
					ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: ns}}}
			g.Expect(env.Client.Create(ctx, class)).To(Succeed())
			workspace := func(name string) *workspacesv1.WorkspaceDeployment {
				// Child namespaces are ws-<name>: names differ per test.
				name += ns[strings.LastIndex(ns, "-"):]
				w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class.Name,
						ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: ns}}}
				g.Expect(env.Client.Create(ctx, w)).To(Succeed())
				return w
			}

			leader := replica(t, ns, "a")
			var first string
			g.Eventually(func(g Gomega) { first = holder(ns); g.Expect(first).NotTo(BeEmpty()) }, timeout, poll).Should(Succeed())
			standby := replica(t, ns, "b")
			world.EventuallyPhase(t, env.Client, workspace("before"), workspacesv1.PhaseRunning)
			g.Expect(holder(ns)).To(Equal(first), "the first replica leads")
			time.Sleep(3 * time.Second) // the standby has synced and is trying the Lease.

			start := time.Now()
			c.end(leader)
			w := workspace("after")
			g.Eventually(func(g Gomega) {
				h := holder(ns)
				g.Expect(h).NotTo(BeEmpty())
				g.Expect(h).NotTo(Equal(first))
			}, timeout, 20*time.Millisecond).Should(Succeed(), "the standby takes the Lease")
			took := time.Since(start)
			world.WaitFor(t, timeout, "the workspace created as the leader went is Running", func() bool {
				got := &workspacesv1.WorkspaceDeployment{}
				return env.Client.Get(ctx, client.ObjectKeyFromObject(w), got) == nil && got.Status.Phase == workspacesv1.PhaseRunning
			})
			total := time.Since(start)
			g.Expect(standby.Exited()).To(Succeed())
			fmt.Printf("failover %s: Lease taken over after %s, new workspace Running after %s\n",
				c.name, took.Round(100*time.Millisecond), total.Round(100*time.Millisecond))
		})
	}
}
