package world

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Timeout bounds the waits of the helpers.
const Timeout = 60 * time.Second

// Poll is how often the waits look.
const Poll = 200 * time.Millisecond

// EventuallyPhase waits until a workspace reaches a phase and returns it.
func EventuallyPhase(t testing.TB, c client.Client, w *workspacesv1.WorkspaceDeployment,
	phase workspacesv1.WorkspacePhase) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	out := &workspacesv1.WorkspaceDeployment{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(w), out)).To(Succeed())
		g.Expect(out.Status.Phase).To(Equal(phase), "message: %s", out.Status.Message)
	}, Timeout, Poll).Should(Succeed())
	return out
}

// Get reads a workspace in an Eventually.
func Get(g Gomega, c client.Client, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	out := &workspacesv1.WorkspaceDeployment{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(w), out)).To(Succeed())
	return out
}

// DeleteAndWait deletes a workspace, waits until it is gone (its finalizer
// released while a manager runs) and returns the time its deletion was
// requested (zero when it was gone already).
func DeleteAndWait(t testing.TB, c client.Client, w *workspacesv1.WorkspaceDeployment) time.Time {
	t.Helper()
	ctx := context.Background()
	_ = c.Delete(ctx, w)
	var deleted time.Time
	got := &workspacesv1.WorkspaceDeployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err == nil && got.DeletionTimestamp != nil {
		deleted = got.DeletionTimestamp.Time
	}
	NewWithT(t).Eventually(func() bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(w), &workspacesv1.WorkspaceDeployment{})
		return err != nil && client.IgnoreNotFound(err) == nil
	}, Timeout, Poll).Should(BeTrue(), "workspace %s is not gone", w.Name)
	return deleted
}

// WaitFor polls cond every 100ms for up to limit, failing the benchmark or
// test when it is not reached, and returns how long it took.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not reached within %s", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}
