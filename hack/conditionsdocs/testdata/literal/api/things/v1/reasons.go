package v1

// ReadyCondition is the summary.
const ReadyCondition = "Ready"

// Reasons of things.
const (
	// UsedReason: set by internal/thing.
	UsedReason = "Used"
	// OtherReason: set by internal/thing too.
	OtherReason = "Other"
)

// Reasons only the other operator sets.
//
//apiary:exalsius-only
const ForeignReason = "Foreign"
