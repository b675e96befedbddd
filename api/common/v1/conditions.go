package v1

// Condition types shared by Apiary objects. Ready, Reconciling and Stalled
// follow kstatus: Ready is the summary, Reconciling=True while work is in
// progress, Stalled=True when progress needs a change of spec or environment.
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"

	// RenderedCondition reports whether the object's bundles rendered.
	RenderedCondition = "Rendered"
	// DeliveredCondition reports whether the rendered objects reached the sink.
	DeliveredCondition = "Delivered"
	// CommittedCondition reports the Git commit that holds the objects (Git mode).
	CommittedCondition = "Committed"
	// SyncedCondition reports that Flux applied the committed revision (Git mode).
	SyncedCondition = "Synced"
)

// Reasons shared by Apiary objects.
const (
	SucceededReason            = "Succeeded"
	FailedReason               = "Failed"
	ProgressingReason          = "Progressing"
	ProgressingWithRetryReason = "ProgressingWithRetry"
	DeletingReason             = "Deleting"
	SuspendedReason            = "Suspended"
	// UndecodableReason: the API server holds the object but Apiary cannot
	// decode it (a value stored before its CRD refused such values); it is
	// kept out of the manager's cache and nothing is done to it.
	UndecodableReason = "Undecodable"

	RenderFailedReason   = "RenderFailed"
	BundleNotFoundReason = "BundleNotFound"
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
