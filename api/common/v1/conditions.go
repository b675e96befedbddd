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
