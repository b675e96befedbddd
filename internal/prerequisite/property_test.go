package prerequisite

import (
	"testing"
	"time"
)

// byteChooser takes its choices from fuzz bytes, then zeros.
type byteChooser struct {
	data []byte
}

func (c *byteChooser) IntN(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

// pool is the templates of one prerequisite that classes pin, in no order.
var pool = []Template{
	tmpl("cm-1-15", "1.15.3"), tmpl("cm-1-16", "1.16.0"), tmpl("cm-1-16-b", "1.16.0"), tmpl("cm-1-17", "v1.17"),
	tmpl("cm-1-18-rc", "1.18.0-rc.1"), tmpl("cm-1-18", "1.18.0"), tmpl("cm-latest", "latest"), tmpl("cm-none", ""),
}

// FuzzDecideSequence has workspaces of classes pinning random templates of
// one prerequisite reconcile in random order, carrying out every verdict on
// one shared install, and checks what Decide promises: the first template
// creates it; the installed semantic version never goes down and only an
// upgrade changes the install, to a strictly newer version; an install
// that serves a workspace is kept on its next reconcile; and the install
// ends at the highest semantic version pinned since it was created with one,
// whatever the order, after at most one upgrade per newer version.
func FuzzDecideSequence(f *testing.F) {
	f.Add([]byte{1, 5, 3, 0, 2, 6, 7, 4})
	f.Add([]byte{6, 1, 5})
	f.Add([]byte{7, 7, 3, 3, 5, 5, 0})
	f.Add([]byte{4, 5, 4, 3, 2, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{data: data}
		var installed *Template
		upgrades := 0
		upgradedTo := map[string]bool{}
		var highest *Template // highest semantic version pinned since creation
		for step := 0; step < 3*len(data)+1; step++ {
			want := pool[c.IntN(len(pool))]
			v := Decide(installed, want, "")
			before := installed
			switch v.Action {
			case Create:
				if installed != nil {
					t.Fatalf("step %d: Create over an install of %s", step, installed)
				}
				w := want
				installed = &w
			case Upgrade:
				if installed.Version == nil || want.Version == nil || !want.Version.GreaterThan(installed.Version) {
					t.Fatalf("step %d: upgrade from %s to %s", step, installed, want)
				}
				if upgradedTo[want.Version.String()] {
					t.Fatalf("step %d: upgraded to %s twice", step, want.Version)
				}
				upgradedTo[want.Version.String()] = true
				upgrades++
				w := want
				installed = &w
			case Keep:
			default:
				t.Fatalf("step %d: action %s without a constraint", step, v.Action)
			}
			if before != nil && before.Version != nil && (installed.Version == nil || installed.Version.LessThan(before.Version)) {
				t.Fatalf("step %d: version went from %s to %s", step, before, installed)
			}
			if again := Decide(installed, want, ""); v.Action != Keep && again.Action != Keep {
				t.Fatalf("step %d: after %s to %s the next reconcile does %s", step, v.Action, want, again.Action)
			}
			if want.Version != nil && (highest == nil || want.Version.GreaterThan(highest.Version)) {
				w := want
				highest = &w
			}
		}
		if installed.Version != nil && highest != nil && !installed.Version.Equal(highest.Version) {
			t.Fatalf("the install ends at %s, not at the highest version pinned, %s", installed, highest)
		}
		if upgrades > len(upgradedTo) {
			t.Fatalf("%d upgrades to %d versions", upgrades, len(upgradedTo))
		}
	})
}

// FuzzRemoval runs one install through random workspace arrivals,
// deletions (a workspace being deleted stays visible a while, then is
// gone), reconciles that may be skipped (coalesced events), clock jumps and
// restarts (the record on the object survives, memory does not), carrying
// out every PlanRemoval, and checks: nothing is removed while a workspace
// that is not being deleted needs it, nor before the grace period has passed
// since the last deletion of a workspace that any reconcile saw; and an
// install that nobody needs for the grace period plus a reconcile is removed.
func FuzzRemoval(f *testing.F) {
	f.Add([]byte{0, 2, 3, 4, 4, 4, 4, 4}, uint8(3))
	f.Add([]byte{0, 3, 0, 2, 2, 3, 4, 1, 4, 4, 4}, uint8(10))
	f.Add([]byte{0, 2, 3, 5, 4, 4, 0, 4, 2, 3, 4}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, graceSeconds uint8) {
		type ws struct {
			deletedAt time.Time // zero while not being deleted
			gone      bool
			seen      bool // by some reconcile
		}
		c := &byteChooser{data: data}
		grace := time.Duration(graceSeconds) * time.Second
		now := time.Date(2026, 7, 2, 12, 0, 0, 0, time.UTC)
		var workspaces []*ws
		var recorded time.Time
		removed := false
		reconcile := func() {
			needed := false
			var lastGone time.Time
			for _, w := range workspaces {
				if w.gone {
					continue
				}
				w.seen = true
				if w.deletedAt.IsZero() {
					needed = true
				} else if w.deletedAt.After(lastGone) {
					lastGone = w.deletedAt
				}
			}
			p := PlanRemoval(needed, lastGone, recorded, grace, now)
			switch p.Action {
			case MarkUnused:
				if p.After <= 0 || p.After > grace+time.Second {
					t.Fatalf("marked unused with %s left of a %s grace period", p.After, grace)
				}
				recorded = p.Since
			case ClearUnused:
				recorded = time.Time{}
			case Remove:
				if needed || grace <= 0 {
					t.Fatalf("removed while needed=%t, grace %s", needed, grace)
				}
				for _, w := range workspaces {
					if w.seen && now.Before(w.deletedAt.Add(grace)) {
						t.Fatalf("removed at %s, before the grace period after a deletion at %s", now, w.deletedAt)
					}
				}
				removed = true
			}
		}
		for step := 0; step < 4*len(data) && !removed; step++ {
			switch c.IntN(6) {
			case 0: // a workspace arrives
				workspaces = append(workspaces, &ws{})
			case 1: // a reconcile is skipped: nothing happens
			case 2: // a workspace is being deleted
				for _, w := range workspaces {
					if !w.gone && w.deletedAt.IsZero() {
						w.deletedAt = now
						break
					}
				}
			case 3: // a workspace being deleted is gone
				for _, w := range workspaces {
					if !w.gone && !w.deletedAt.IsZero() {
						w.gone = true
						break
					}
				}
			case 4:
				reconcile()
			case 5: // restart: only the record survives, and the clock runs on
			}
			now = now.Add(time.Duration(c.IntN(4)) * 700 * time.Millisecond)
		}
		if removed || grace <= 0 {
			return
		}
		for _, w := range workspaces {
			if !w.gone && w.deletedAt.IsZero() {
				return // still needed
			}
		}
		reconcile()
		now = now.Add(grace + time.Second)
		reconcile()
		if !removed {
			t.Fatalf("unused for the whole %s grace period, and not removed (record %s, now %s)", grace, recorded, now)
		}
	})
}
