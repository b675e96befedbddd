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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// EnvRun turns the test on.
const EnvRun = "APIARY_FAILOVER"

const (
	leaseName = "apiary-failover"
	timeout   = 2 * time.Minute
	poll      = 100 * time.Millisecond
)

var (
	running *world.Running
	env     *testenv.Environment
)

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "failover", Management: true, Child: true, StandIn: standin.InWorld(), Binary: world.Debug,
		Skip: func() string {
			if os.Getenv(EnvRun) != "1" {
				return fmt.Sprintf("set %s=1 to measure", EnvRun)
			}
			return ""
		}},
		func(r *world.Running) error {
			running, env = r, r.Management
			return nil
		})
}

// replica starts a manager with leader election on the Lease leaseName in
// ns, with controller-runtime's default timings (a 15 s Lease, renewed
// every 2 s), as the chart runs it.
func replica(t *testing.T, ns, name string) *world.Process {
	t.Helper()
	p := running.NewProcess(ns+"-"+name+".log",
		"--leader-elect=true", "--leader-election-namespace="+ns, "--leader-election-id="+leaseName)
	if err := p.Start(); err != nil {
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
			class := builder.NewClass(ns, "failover")
			g.Expect(env.Client.Create(ctx, class)).To(Succeed())
			workspace := func(name string) *workspacesv1.WorkspaceDeployment {
				// Child namespaces are ws-<name>: names differ per test.
				name += ns[strings.LastIndex(ns, "-"):]
				w := builder.Workspace(ns, name, class.Name, builder.Cluster)
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
