package v1

// ReadyCondition is the summary.
const ReadyCondition = "Ready"

// Reasons of things.
const (
	// UsedReason: set by internal/thing.
	UsedReason = "Used"
	// TwinReason: set, but the value of UsedReason.
	TwinReason = "Used"
	// UnusedReason: declared, and set nowhere.
	UnusedReason = "Unused"
)

// Reasons only the other operator sets.
//
//apiary:exalsius-only
const ForeignReason = "Foreign"
