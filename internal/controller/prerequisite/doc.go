// Package prerequisite is the controller of the shared prerequisite
// ServiceSets: it owns their removal once no workspace of their cluster needs
// them, after a grace period, and the events that say so
// (PrerequisiteUnused, PrerequisiteNeededAgain, PrerequisiteRemoved). It
// never creates an install: the workspace controller does, through
// internal/prerequisite/install, and both take their decisions through the
// Writes of internal/prerequisite. It imports no other kind's package
// (kinds_test.go).
package prerequisite
