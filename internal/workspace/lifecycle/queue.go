package lifecycle

import (
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
)

// Priority is the priority a workspace waits with, as its status says.
func Priority(s *workspacesv1.WorkspaceDeployment) int32 {
	if s.Status.Priority == nil {
		return 0
	}
	return s.Status.Priority.Value
}

// QueuedBefore orders workspaces in the queues for GPUs and quota
// (admission.QueueOrder): the higher priority first, then the time they
// queued (creation, or the start after a stop), then UID.
func QueuedBefore(a, b *workspacesv1.WorkspaceDeployment) bool {
	return admission.QueueOrder(Priority(a), QueuedAt(a), string(a.UID), Priority(b), QueuedAt(b), string(b.UID)) < 0
}

// ClaimsPlace reports whether a workspace holds a place in the queues for
// GPUs and quota: it waits, and will claim what they hand it. A workspace
// that is suspended, asked to stop or being deleted will not, and holds no
// place (it keeps the time it queued: resumed, it is as old as it was, and
// blocked no one meanwhile).
func ClaimsPlace(s *workspacesv1.WorkspaceDeployment) bool {
	return s.Status.Phase == workspacesv1.PhaseWaiting && s.DeletionTimestamp.IsZero() && s.Status.ResolvedResources != nil &&
		!s.Spec.Suspend && (s.Spec.Lifecycle == nil || !s.Spec.Lifecycle.Stopped)
}
