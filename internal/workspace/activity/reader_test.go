package activity

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// gatedSource answers when its gate opens, and then says the workspace
// was last active an hour before it was asked.
type gatedSource struct{ gate chan struct{} }

func (s gatedSource) Observe(ctx context.Context, _ Target, now time.Time) (Observation, error) {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return Observation{}, ctx.Err()
	}
	return at(now.Add(-time.Hour), now, "gated"), nil
}

// TestReaderNeverMakesItsCallerWait: LastActivity answers Pending at once
// while the source hangs, starts one probe per workspace, wakes the
// workspace when the answer comes, and hands the answer out once, stamped
// with the reader's clock at the time the source was asked.
func TestReaderNeverMakesItsCallerWait(t *testing.T) {
	g := NewWithT(t)
	gate := make(chan struct{})
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	r := &Reader{Clock: clock, Prober: &Prober{
		Sources: map[Format]Source{PrometheusGPU: gatedSource{gate}}, Timeout: 10 * time.Second}}
	updates := r.Subscribe()
	tgt := func(name string) lifecycle.ActivityTarget {
		return lifecycle.ActivityTarget{Workspace: types.NamespacedName{Namespace: "t", Name: name}, Namespace: "ws-" + name,
			Policy: &workspacesv1.IdlePolicy{After: metav1.Duration{Duration: time.Hour},
				Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	}
	start := time.Now()
	for range 3 {
		for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			g.Expect(r.LastActivity(context.Background(), tgt(name)).Pending).To(BeTrue())
		}
	}
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), "no caller waited for a source")
	r.mu.Lock()
	g.Expect(r.entries).To(HaveLen(10), "one probe per workspace")
	r.mu.Unlock()

	close(gate)
	woken := map[string]bool{}
	for len(woken) < 10 {
		select {
		case e := <-updates:
			woken[e.Object.GetName()] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("woken: %v", woken)
		}
	}
	clock.SetTime(clock.Now().Add(time.Minute)) // read later: the answer keeps the time it was asked
	a := r.LastActivity(context.Background(), tgt("a"))
	g.Expect(a.Pending).To(BeFalse())
	g.Expect(a.Known).To(BeTrue())
	g.Expect(a.At).To(Equal(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)))
	g.Expect(a.At.Sub(a.Last)).To(Equal(time.Hour))
	g.Expect(r.LastActivity(context.Background(), tgt("a")).Pending).To(BeTrue(), "an answer is handed out once")
}
