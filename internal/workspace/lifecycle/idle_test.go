package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestDecideIdle(t *testing.T) {
	policy := &workspacesv1.IdlePolicy{After: metav1.Duration{Duration: time.Hour}, MinRuntime: dur(2 * time.Hour)}
	noMin := &workspacesv1.IdlePolicy{After: metav1.Duration{Duration: time.Hour}}
	cases := []struct {
		name    string
		p       *workspacesv1.IdlePolicy
		now     time.Duration // since runningSince (t0)
		started bool
		a       Activity
		cull    bool
		idleFor time.Duration
	}{
		{name: "unknown never culls", p: policy, now: 10 * time.Hour, started: true, a: Activity{}},
		{name: "not running", p: policy, now: 10 * time.Hour, a: Activity{Known: true, Last: t0}},
		{name: "idle long enough, ran long enough", p: policy, now: 3 * time.Hour, started: true, a: Activity{Known: true, Last: t0.Add(time.Hour)}, cull: true, idleFor: 2 * time.Hour},
		{name: "idle long enough, ran too short", p: policy, now: 90 * time.Minute, started: true, a: Activity{Known: true, Last: t0}, idleFor: 90 * time.Minute},
		{name: "active recently", p: policy, now: 5 * time.Hour, started: true, a: Activity{Known: true, Last: t0.Add(4*time.Hour + 30*time.Minute)}, idleFor: 30 * time.Minute},
		{name: "activity before the start counts from the start", p: noMin, now: 50 * time.Minute, started: true, a: Activity{Known: true, Last: t0.Add(-10 * time.Hour)}, idleFor: 50 * time.Minute},
		{name: "min runtime defaults to after", p: noMin, now: time.Hour, started: true, a: Activity{Known: true, Last: t0}, cull: true, idleFor: time.Hour},
		{name: "future activity counts as now", p: noMin, now: 3 * time.Hour, started: true, a: Activity{Known: true, Last: t0.Add(100 * time.Hour)}},
		{name: "no policy", p: nil, now: 3 * time.Hour, started: true, a: Activity{Known: true, Last: t0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var since time.Time
			if tc.started {
				since = t0
			}
			p := tc.p
			if p == nil {
				p = &workspacesv1.IdlePolicy{}
			}
			v := DecideIdle(p, t0.Add(tc.now), since, tc.a)
			g.Expect(v.Cull).To(Equal(tc.cull))
			g.Expect(v.IdleFor).To(Equal(tc.idleFor))
			g.Expect(v.Next.After(t0.Add(tc.now))).To(BeTrue())
		})
	}
}

func TestCheckPeriod(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CheckPeriod(&workspacesv1.IdlePolicy{After: metav1.Duration{Duration: time.Minute}})).To(Equal(30 * time.Second))
	g.Expect(CheckPeriod(&workspacesv1.IdlePolicy{After: metav1.Duration{Duration: 8 * time.Minute}})).To(Equal(2 * time.Minute))
	g.Expect(CheckPeriod(&workspacesv1.IdlePolicy{After: metav1.Duration{Duration: 24 * time.Hour}})).To(Equal(5 * time.Minute))
}

// FuzzDecideIdle: a cull needs a known activity, the policy's idle time
// and its minimum runtime, whatever the times.
func FuzzDecideIdle(f *testing.F) {
	f.Add(int64(time.Hour), int64(2*time.Hour), int64(3*time.Hour), int64(time.Hour), true)
	f.Fuzz(func(t *testing.T, after, minRun, now, last int64, known bool) {
		p := &workspacesv1.IdlePolicy{After: metav1.Duration{Duration: time.Duration(after)}}
		if minRun != 0 {
			p.MinRuntime = dur(time.Duration(minRun))
		}
		n := t0.Add(time.Duration(now))
		v := DecideIdle(p, n, t0, Activity{Known: known, Last: t0.Add(time.Duration(last))})
		if !v.Cull {
			return
		}
		if !known || after <= 0 {
			t.Fatal("culled without a known activity or a policy")
		}
		if v.IdleFor < p.After.Duration || n.Sub(t0) < MinRuntime(p) {
			t.Fatalf("culled after %v idle, %v run", v.IdleFor, n.Sub(t0))
		}
		if l := t0.Add(time.Duration(last)); !l.After(n) && n.Sub(l) < p.After.Duration && !l.Before(t0) {
			t.Fatal("culled despite activity within After")
		}
	})
}
