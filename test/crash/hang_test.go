package crash_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiarymanager "github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
)

const (
	// hangBatch cycles run at once.
	hangBatch = 10
	// goroutineSlack is how many more goroutines than before the cycles
	// the process may have after them: far fewer than one per cycle.
	goroutineSlack = 20
	// heapSlack is how much more live heap than before the cycles the
	// process may hold after them.
	heapSlack = 64 << 20
)

// TestBadChildClustersWaitAndLeakNothing runs cfg.hangCycles child
// clusters that hang (accept TCP, never answer) or answer garbage (bytes
// that are not TLS, or HTTP bodies that are not Kubernetes JSON), in
// batches, through a manager in this process so that its goroutines and
// heap can be counted. Each cycle creates a ClusterDeployment whose
// kubeconfig reaches such a server and a GPU workspace on it, waits until
// the workspace says that its cluster cannot be reached, and deletes both.
// Alongside each batch a workspace on a healthy cluster must come up. After
// the cycles the process must be back to its goroutines and heap of before.
func TestBadChildClustersWaitAndLeakNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	began := time.Now()
	f := newFleet(t, "h", 1, 1)
	managertest.Start(t, apiarymanager.Options{RestConfig: env.Config, InventoryInterval: time.Minute, NoCrossNamespaceRefs: true})
	f.createColony()

	var reason, message string
	var mu sync.Mutex
	slowest := map[string]time.Duration{}
	round := func(first, n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n+1)
		for i := first; i < first+n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kind := badChildKinds[i%len(badChildKinds)]
				r, m, took, err := f.badCycle(ctx, i, kind)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				slowest[kind] = max(slowest[kind], took.Round(time.Second))
				if i == 0 {
					reason, message = r, m
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.goodCycle(ctx, first); err != nil {
				errs <- err
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}

	// A first batch warms up what the manager keeps for good (clients,
	// informers of the management cluster, connection pools).
	round(0, hangBatch)
	goroutinesBefore, heapBefore := settledFigures()
	cycles := hangBatch
	for cycles < cfg.hangCycles {
		n := min(hangBatch, cfg.hangCycles-cycles)
		round(cycles, n)
		cycles += n
	}
	var goroutinesAfter int
	var heapAfter uint64
	g.Eventually(func() int {
		goroutinesAfter, heapAfter = settledFigures()
		return goroutinesAfter
	}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(BeNumerically("<=", goroutinesBefore+goroutineSlack),
		"goroutines after %d cycles of bad children (%d before)", cycles, goroutinesBefore)
	g.Expect(heapAfter).To(BeNumerically("<=", heapBefore+heapSlack), "live heap after the cycles")
	t.Logf("bad children: %d cycles (%d each of %v, %d at a time) waited with %s (%q; slowest to say so: %v), healthy workspaces ran alongside; "+
		"goroutines %d before, %d after; live heap %d MiB before, %d MiB after; %s",
		cycles, cycles/len(badChildKinds), badChildKinds, hangBatch, reason, message, slowest,
		goroutinesBefore, goroutinesAfter, heapBefore>>20, heapAfter>>20, time.Since(began).Round(time.Second))
}

// settledFigures are the process's goroutines and live heap after a GC.
func settledFigures() (int, uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// badCycle runs one bad child: its ClusterDeployment, a GPU workspace that
// must wait with the reason ChildUnreachable (never Running, never
// Failed), and their deletion. It returns the reason and message shown,
// and how long after the workspace's creation they were.
func (f *fleet) badCycle(ctx context.Context, i int, kind string) (string, string, time.Duration, error) {
	b := startBadChild(f.t, kind)
	defer b.stop()
	name := fmt.Sprintf("bad-%03d", i)
	running.Route(f.ns+"/"+name, b.kubeconfig())
	defer running.Unroute(f.ns + "/" + name)
	cd := standin.NewClusterDeployment(f.ns, name, "tpl", "cred")
	if err := f.c.Create(ctx, cd); err != nil {
		return "", "", 0, fmt.Errorf("cycle %d (%s): %w", i, kind, err)
	}
	w := &workspace{name: fmt.Sprintf("w-bad-%03d", i), cluster: name, class: f.plainClass(), gpus: 1}
	if err := f.create(w); err != nil {
		return "", "", 0, fmt.Errorf("cycle %d (%s): %w", i, kind, err)
	}
	created := time.Now()
	var reason, message string
	var took time.Duration
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		obj := &workspacesv1.WorkspaceDeployment{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, obj); err != nil {
			return false, err
		}
		switch obj.Status.Phase {
		case workspacesv1.PhaseRunning, workspacesv1.PhaseFailed:
			return false, fmt.Errorf("workspace %s on a %s child is %s: %s", w.name, kind, obj.Status.Phase, obj.Status.Message)
		}
		for _, c := range obj.Status.Conditions {
			if c.Reason == workspacesv1.ChildUnreachableReason && c.Status != metav1.ConditionTrue {
				reason, message, took = c.Type+"="+string(c.Status)+" "+c.Reason, c.Message, time.Since(created)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", "", 0, fmt.Errorf("cycle %d (%s): %w", i, kind, err)
	}
	if err := f.remove(w); err != nil {
		return "", "", 0, err
	}
	if err := f.c.Delete(ctx, cd); err != nil {
		return "", "", 0, fmt.Errorf("cycle %d (%s): deleting %s: %w", i, kind, name, err)
	}
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		wErr := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, &workspacesv1.WorkspaceDeployment{})
		cdErr := f.c.Get(ctx, client.ObjectKeyFromObject(cd), &k0rdentv1beta1.ClusterDeployment{})
		return client.IgnoreNotFound(wErr) == nil && wErr != nil && client.IgnoreNotFound(cdErr) == nil && cdErr != nil, nil
	})
	if err != nil {
		return "", "", 0, fmt.Errorf("cycle %d (%s): workspace %s and its ClusterDeployment are not gone: %w", i, kind, w.name, err)
	}
	return reason, message, took, nil
}

// goodCycle runs a workspace on the healthy cluster until it is Running
// (its release installed) and deletes it.
func (f *fleet) goodCycle(ctx context.Context, i int) error {
	w := &workspace{name: fmt.Sprintf("w-good-%03d", i), cluster: f.clusters[0], class: f.plainClass()}
	if err := f.create(w); err != nil {
		return err
	}
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		obj := &workspacesv1.WorkspaceDeployment{}
		if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, obj); err != nil {
			return false, err
		}
		return obj.Status.Phase == workspacesv1.PhaseRunning &&
			apimeta.IsStatusConditionTrue(obj.Status.Conditions, "Ready"), nil
	})
	if err != nil {
		return fmt.Errorf("workspace %s on the healthy cluster while bad children wait: %w", w.name, err)
	}
	if err := f.remove(w); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, &workspacesv1.WorkspaceDeployment{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
}

// poll calls done every 250ms until it says true or fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if ok, err := done(); ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
