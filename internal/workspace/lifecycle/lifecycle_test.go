package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func at(d time.Duration) *metav1.Time      { t := metav1.NewTime(t0.Add(d)); return &t }

func TestDecide(t *testing.T) {
	stopClass := &workspacesv1.ClassLifecycle{DefaultLifetime: dur(8 * time.Hour), MaxLifetime: dur(24 * time.Hour)}
	deleteClass := &workspacesv1.ClassLifecycle{MaxLifetime: dur(24 * time.Hour), ExpiryPolicy: workspacesv1.ExpiryDelete,
		ExpiryWarning: dur(10 * time.Minute)}
	cases := []struct {
		name    string
		now     time.Duration
		spec    *workspacesv1.WorkspaceLifecycle
		class   *workspacesv1.ClassLifecycle
		action  Action
		reason  workspacesv1.StopReason
		expires time.Duration // 0: none
		soon    bool
		next    time.Duration // 0: none
	}{
		{name: "nothing bounds it", now: 100 * time.Hour, action: Run},
		{name: "asked to stop", spec: &workspacesv1.WorkspaceLifecycle{Stopped: true}, action: Stop, reason: workspacesv1.StopRequested},
		{name: "class default lifetime, early", now: time.Hour, class: stopClass, action: Run, expires: 8 * time.Hour, next: 7 * time.Hour},
		{name: "class default lifetime, warned", now: 7*time.Hour + time.Minute, class: stopClass, action: Run, expires: 8 * time.Hour, soon: true, next: 8 * time.Hour},
		{name: "class default lifetime, expired stops", now: 8 * time.Hour, class: stopClass, action: Stop, reason: workspacesv1.StopExpired, expires: 8 * time.Hour},
		{name: "own lifetime beats the default", now: time.Hour, spec: &workspacesv1.WorkspaceLifecycle{Lifetime: dur(2 * time.Hour)}, class: stopClass,
			action: Run, expires: 2 * time.Hour, soon: true, next: 2 * time.Hour},
		{name: "max lifetime caps a longer ask", now: 30 * time.Hour, spec: &workspacesv1.WorkspaceLifecycle{ExpireAt: at(48 * time.Hour)}, class: stopClass,
			action: Stop, reason: workspacesv1.StopExpired, expires: 24 * time.Hour},
		{name: "expireAt without class", now: time.Minute, spec: &workspacesv1.WorkspaceLifecycle{ExpireAt: at(3 * time.Hour)},
			action: Run, expires: 3 * time.Hour, next: 2 * time.Hour},
		{name: "delete policy", now: 25 * time.Hour, class: deleteClass, action: Delete, reason: workspacesv1.StopExpired, expires: 24 * time.Hour},
		{name: "delete policy, own warning", now: 23*time.Hour + 55*time.Minute, class: deleteClass, action: Run, expires: 24 * time.Hour, soon: true, next: 24 * time.Hour},
		{name: "expired beats a stop request", now: 9 * time.Hour, spec: &workspacesv1.WorkspaceLifecycle{Stopped: true}, class: stopClass,
			action: Stop, reason: workspacesv1.StopExpired, expires: 8 * time.Hour},
		{name: "stopped and warned", now: 7*time.Hour + 30*time.Minute, spec: &workspacesv1.WorkspaceLifecycle{Stopped: true}, class: stopClass,
			action: Stop, reason: workspacesv1.StopRequested, expires: 8 * time.Hour, soon: true, next: 8 * time.Hour},
		{name: "negative lifetime counts as none", now: time.Second, spec: &workspacesv1.WorkspaceLifecycle{Lifetime: dur(-time.Hour)},
			action: Stop, reason: workspacesv1.StopExpired, expires: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Decide(Input{Now: t0.Add(tc.now), Created: t0, Spec: tc.spec, Class: tc.class})
			g.Expect(v.Action).To(Equal(tc.action))
			g.Expect(v.Reason).To(Equal(tc.reason))
			g.Expect(v.ExpiresSoon).To(Equal(tc.soon))
			if tc.expires != 0 || tc.name == "negative lifetime counts as none" {
				g.Expect(v.ExpiresAt).To(Equal(t0.Add(tc.expires)))
			} else {
				g.Expect(v.ExpiresAt.IsZero()).To(BeTrue())
			}
			if tc.next != 0 {
				g.Expect(v.Next).To(Equal(t0.Add(tc.next)))
			} else {
				g.Expect(v.Next.IsZero()).To(BeTrue())
			}
		})
	}
}

func TestQueuedAt(t *testing.T) {
	g := NewWithT(t)
	w := &workspacesv1.WorkspaceDeployment{}
	w.CreationTimestamp = metav1.NewTime(t0)
	g.Expect(QueuedAt(w)).To(Equal(t0), "before a stop: the creation")
	w.Status.Lifecycle = &workspacesv1.WorkspaceLifecycleStatus{StoppedAt: at(time.Hour)}
	g.Expect(QueuedAt(w)).To(Equal(t0), "stopped, not asked to start")
	w.Status.Lifecycle.QueuedAt = at(2 * time.Hour)
	g.Expect(QueuedAt(w)).To(Equal(t0.Add(2*time.Hour)), "asked to start: from then")

	// Preempted at 3h, with its requeue timestamp (Creation: the place it held).
	w.Status.Lifecycle.Preemption = &workspacesv1.WorkspacePreemption{By: "team/urgent", At: *at(3 * time.Hour), QueueAs: at(2 * time.Hour)}
	w.Status.Lifecycle.QueuedAt = at(2 * time.Hour)
	g.Expect(QueuedAt(w)).To(Equal(t0.Add(2*time.Hour)), "preempted, not started yet")
	w.Status.Lifecycle.QueuedAt = at(4 * time.Hour)
	g.Expect(QueuedAt(w)).To(Equal(t0.Add(2*time.Hour)), "started after the preemption: the place the preemption gave it")
	w.Status.Lifecycle.Preemption.QueueAs = at(3 * time.Hour)
	g.Expect(QueuedAt(w)).To(Equal(t0.Add(3*time.Hour)), "Eviction: from the preemption")
	w.Status.Lifecycle.Preemption.QueueAs = nil
	g.Expect(QueuedAt(w)).To(Equal(t0.Add(4*time.Hour)), "no requeue timestamp: from the start")
}

// FuzzDecide checks the invariants of the verdict for any durations and
// times: a workspace is never stopped as expired before its expiry, never
// deleted unless the class says Delete, the expiry never lies beyond the
// class's maximum, and the next change is in the future.
func FuzzDecide(f *testing.F) {
	f.Add(int64(time.Hour), int64(0), int64(0), int64(8*time.Hour), int64(24*time.Hour), int64(time.Hour), false, false)
	f.Add(int64(30*time.Hour), int64(48*time.Hour), int64(0), int64(0), int64(24*time.Hour), int64(0), true, true)
	f.Fuzz(func(t *testing.T, now, expireAt, lifetime, def, maxL, warn int64, stopped, del bool) {
		in := Input{Now: t0.Add(time.Duration(now)), Created: t0, Spec: &workspacesv1.WorkspaceLifecycle{Stopped: stopped}}
		if expireAt != 0 {
			in.Spec.ExpireAt = at(time.Duration(expireAt))
		} else if lifetime != 0 {
			in.Spec.Lifetime = dur(time.Duration(lifetime))
		}
		in.Class = &workspacesv1.ClassLifecycle{}
		if def != 0 {
			in.Class.DefaultLifetime = dur(time.Duration(def))
		}
		if maxL != 0 {
			in.Class.MaxLifetime = dur(time.Duration(maxL))
		}
		if warn != 0 {
			in.Class.ExpiryWarning = dur(time.Duration(warn))
		}
		if del {
			in.Class.ExpiryPolicy = workspacesv1.ExpiryDelete
		}
		v := Decide(in)
		if v.Reason == workspacesv1.StopExpired && (v.ExpiresAt.IsZero() || in.Now.Before(v.ExpiresAt)) {
			t.Fatalf("expired before its expiry %v at %v", v.ExpiresAt, in.Now)
		}
		if v.Action == Delete && !del {
			t.Fatal("deleted without the Delete policy")
		}
		if maxL > 0 && v.ExpiresAt.After(t0.Add(time.Duration(maxL))) {
			t.Fatalf("expiry %v beyond the class's maximum", v.ExpiresAt)
		}
		if !v.Next.IsZero() && !v.Next.After(in.Now) {
			t.Fatalf("next change %v not after now %v", v.Next, in.Now)
		}
		if stopped && v.Action == Run {
			t.Fatal("a stop request ignored")
		}
	})
}
