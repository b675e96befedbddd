package v1

// This file is the one list of the reasons shared by the Apiary API groups:
// of the kstatus conditions (Ready, Reconciling, Stalled) and of rendering,
// delivery and Git. A reason is declared in the list of its group and
// nowhere else, and every reason declared is set somewhere
// (hack/conditionsdocs fails otherwise).

// Reasons shared by Apiary objects.
const (
	SucceededReason            = "Succeeded"
	FailedReason               = "Failed"
	ProgressingReason          = "Progressing"
	ProgressingWithRetryReason = "ProgressingWithRetry"
	DeletingReason             = "Deleting"
	// UndecodableReason: the API server holds the object but Apiary cannot
	// decode it (a value stored before its CRD refused such values); it is
	// kept out of the manager's cache and nothing is done to it.
	UndecodableReason = "Undecodable"

	RenderFailedReason   = "RenderFailed"
	DeliveryFailedReason = "DeliveryFailed"

	// Reasons of the Committed and Synced conditions (Git delivery).
	CommitPendingReason          = "CommitPending"
	GitUnreachableReason         = "GitUnreachable"
	GitAuthFailedReason          = "GitAuthFailed"
	GitPushRejectedReason        = "GitPushRejected"
	InvalidTreeReason            = "InvalidTree"
	NoEncryptionRecipientsReason = "NoEncryptionRecipients"
	// ObjectRefusedReason: the API server would refuse a rendered object
	// (a dry run, or its size), so it was not committed.
	ObjectRefusedReason = "ObjectRefused"
	// InvalidGitCredentialsReason: the credentials Secret is missing or
	// holds nothing usable; nothing was fetched or pushed.
	InvalidGitCredentialsReason = "InvalidGitCredentials"
	// InvalidSigningKeyReason: the signing key Secret is missing or holds
	// no usable key; nothing was committed.
	InvalidSigningKeyReason = "InvalidSigningKey"
	SyncPendingReason       = "SyncPending"
	FluxNotConfiguredReason = "FluxNotConfigured"
)

// PhaseReason is the reason that names a phase: a workspace's or a Colony's
// phase as the reason of its Reconciling condition and of the event of a
// phase change, a ClusterDeployment's as the reason of a Colony's cluster.
// Every reason made of a phase goes through it, so that hack/conditionsdocs
// can tell such a reason (one of the phases it lists) from a reason made of
// any other string.
func PhaseReason[P ~string](phase P) string { return string(phase) }
