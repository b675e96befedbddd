package crash_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// killer SIGKILLs the manager after a random time up, keeps it down for a
// random time, and starts it again, until Stop was called and at least min
// kills were made; the manager is left running.
type killer struct {
	m        *manager
	r        *rng
	min      int
	up, down [2]time.Duration

	mu      sync.Mutex
	stopped bool
	done    chan struct{}
}

func startKiller(m *manager, r *rng, min int) *killer {
	k := &killer{m: m, r: r, min: min, done: make(chan struct{}),
		up: [2]time.Duration{300 * time.Millisecond, 2500 * time.Millisecond}, down: [2]time.Duration{0, 700 * time.Millisecond}}
	go k.run()
	return k
}

func (k *killer) run() {
	defer close(k.done)
	for {
		time.Sleep(k.r.between(k.up[0], k.up[1]))
		k.mu.Lock()
		_, kills, _ := k.m.Counts()
		if k.stopped && kills >= k.min {
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		k.m.Kill()
		time.Sleep(k.r.between(k.down[0], k.down[1]))
		k.m.Start()
	}
}

// Kills is the number of kills so far.
func (k *killer) Kills() int {
	_, kills, _ := k.m.Counts()
	return kills
}

// WaitKills waits until n kills were made.
func (k *killer) WaitKills(n int) {
	for k.Kills() < n {
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop waits for the last kills and returns with the manager running.
func (k *killer) Stop() {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	<-k.done
}

// settle waits until check passes, generously: the 2 cores are shared.
func settle(t testing.TB, timeout time.Duration, check func(g Gomega)) {
	t.Helper()
	NewWithT(t).Eventually(check).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
}

// cleanUp deletes the fleet's workspaces and Colony while a manager runs and
// waits until they are gone, so that later tests' managers find nothing of
// this one's.
func (f *fleet) cleanUp() {
	f.t.Helper()
	ctx := context.Background()
	for _, w := range f.live() {
		_ = f.remove(w)
	}
	_ = client.IgnoreNotFound(f.c.DeleteAllOf(ctx, &infrav1.Colony{}, client.InNamespace(f.ns)))
	settle(f.t, 3*time.Minute, func(g Gomega) {
		ws := &workspacesv1.WorkspaceDeploymentList{}
		g.Expect(f.c.List(ctx, ws, client.InNamespace(f.ns))).To(Succeed())
		g.Expect(ws.Items).To(BeEmpty())
		cols := &infrav1.ColonyList{}
		g.Expect(f.c.List(ctx, cols, client.InNamespace(f.ns))).To(Succeed())
		g.Expect(cols.Items).To(BeEmpty())
	})
}

// retryUpdate retries a change on conflicts with the manager's writes.
func retryUpdate(change func() error) error { return retry.RetryOnConflict(retry.DefaultRetry, change) }
