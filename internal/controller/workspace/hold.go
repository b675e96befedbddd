package workspace

import (
	"time"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// firstWriteGrace is how long after its ServiceSet was created a new
// workspace's status may stay unwritten while its release is on its way.
const firstWriteGrace = 3 * time.Second

// holdFirstWrite decides whether the reconcile of a workspace delivered
// for the first time leaves its status unwritten, and for how long at most:
// a release deployed within firstWriteGrace of its ServiceSet's creation
// (applied at applied) takes the workspace from Pending to Running in one
// status write instead of two (Deploying, then Running), the write that
// costs the API server most per workspace. The ServiceSet's events bring
// the workspace back; the grace's end writes Deploying for a release still
// on its way. It holds only in direct mode (a Git-delivered workspace
// records its commit), for a workspace whose stored status is Pending and
// records no delivery, when everything delivered is what deleting the
// workspace removes by name anyway (deletionInventory): a manager stopped
// during the grace leaves nothing its inventory would have had to name.
// A workspace older than its deploy timeout is never held. It returns 0
// when the status is written now.
func holdFirstWrite(w *workspaceRun, applied time.Time) time.Duration {
	if !w.firstDelivery || w.delivered == nil || w.stopping != "" || w.class == nil {
		return 0
	}
	timeout := deployTimeout(w.class)
	if time.Since(w.obj.CreationTimestamp.Time) > timeout {
		return 0 // a ServiceSet that never stays in the cache holds nothing for long
	}
	grace := min(firstWriteGrace, timeout/2)
	left := grace - time.Since(applied)
	if left <= 0 || left > grace {
		return 0
	}
	if !coveredByName(w, w.delivered) {
		return 0
	}
	w.holdStatus = true
	return left
}

// coveredByName reports whether every entry of inv is an object deleting
// the workspace removes by its name (deletionInventory without a recorded
// inventory).
func coveredByName(w *workspaceRun, inv *commonv1.ResourceInventory) bool {
	named := map[string]bool{}
	bare := w.obj.DeepCopy()
	bare.Status.Delivery = nil
	for _, e := range deletionInventory(bare).Entries {
		named[e.ID] = true
	}
	for _, e := range inv.Entries {
		if !named[e.ID] {
			return false
		}
	}
	return true
}
