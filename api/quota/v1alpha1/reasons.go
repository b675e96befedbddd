package v1alpha1

// This file is the one list of the reasons of the quota group (hack/conditionsdocs
// fails on a reason declared elsewhere, or declared here and never set).

// Reasons of a TenantQuota's conditions and events.
const (
	// EnforcedReason: the quota is enforced and what is used is within its limits.
	EnforcedReason = "Enforced"
	// InvalidSelectorReason: the namespace selector does not parse; the
	// quota selects nothing.
	InvalidSelectorReason = "InvalidSelector"
	// OverLimitReason: what is used exceeds a limit.
	OverLimitReason = "OverLimit"
)
