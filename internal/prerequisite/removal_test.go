package prerequisite

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestPlanRemoval(t *testing.T) {
	now := time.Date(2026, 7, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	grace := 10 * time.Minute
	var zero time.Time
	tests := []struct {
		name     string
		needed   bool
		lastGone time.Time
		recorded time.Time
		grace    time.Duration
		now      time.Time
		want     Removal
	}{
		{"grace off: never", false, zero, at(-time.Hour), 0, now, Removal{Action: Stay}},
		{"grace negative: never", false, zero, zero, -time.Second, now, Removal{Action: Stay}},
		{"needed", true, zero, zero, grace, now, Removal{Action: Stay}},
		{"needed again: the record goes", true, zero, at(-time.Minute), grace, now, Removal{Action: ClearUnused}},
		{"needed while another workspace goes", true, at(-time.Second), zero, grace, now, Removal{Action: Stay}},
		{"newly unused: recorded now", false, zero, zero, grace, now, Removal{Action: MarkUnused, Since: now, After: grace}},
		{"newly unused: rounded up to the second", false, zero, zero, grace, now.Add(300 * time.Millisecond),
			Removal{Action: MarkUnused, Since: at(time.Second), After: grace + 700*time.Millisecond}},
		{"newly unused: from the last workspace's deletion", false, at(-2 * time.Minute), zero, grace, now,
			Removal{Action: MarkUnused, Since: at(-2 * time.Minute), After: 8 * time.Minute}},
		{"waiting", false, zero, at(-4 * time.Minute), grace, now, Removal{Action: Wait, After: 6 * time.Minute}},
		{"waiting, the last deletion is older than the record", false, at(-5 * time.Minute), at(-4 * time.Minute), grace, now,
			Removal{Action: Wait, After: 6 * time.Minute}},
		{"a workspace came and went since the record: the clock restarts", false, at(-time.Minute), at(-9 * time.Minute), grace, now,
			Removal{Action: MarkUnused, Since: at(-time.Minute), After: 9 * time.Minute}},
		{"due", false, zero, at(-grace), grace, now, Removal{Action: Remove}},
		{"overdue (the manager was down)", false, zero, at(-time.Hour), grace, now, Removal{Action: Remove}},
		{"overdue without record: removed, not recorded first", false, at(-time.Hour), zero, grace, now, Removal{Action: Remove}},
		{"record in the future (another clock): waits for it", false, zero, at(time.Minute), grace, now,
			Removal{Action: Wait, After: 11 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(PlanRemoval(tt.needed, tt.lastGone, tt.recorded, tt.grace, tt.now)).To(Equal(tt.want))
		})
	}
}

func TestUnusedSince(t *testing.T) {
	g := NewWithT(t)
	ts := time.Date(2026, 7, 2, 12, 0, 5, 0, time.UTC)
	g.Expect(FormatUnusedSince(ts.In(time.FixedZone("CEST", 2*3600)))).To(Equal("2026-07-02T12:00:05Z"))
	g.Expect(UnusedSince(map[string]string{AnnotationUnusedSince: FormatUnusedSince(ts)}).Equal(ts)).To(BeTrue())
	g.Expect(UnusedSince(nil).IsZero()).To(BeTrue())
	g.Expect(UnusedSince(map[string]string{AnnotationUnusedSince: "yesterday"}).IsZero()).To(BeTrue())
}
