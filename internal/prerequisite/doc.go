// Package prerequisite decides the lifecycle of the shared installs of
// workspace prerequisites, one per prerequisite and child cluster:
//
//   - which ServiceTemplates are the same prerequisite (Key: the
//     LabelKey label of the template, else the name of its Helm chart, else
//     the template's name), so that cert-manager-1-16 and cert-manager-1-17
//     share one install instead of two;
//   - which version the install carries (Decide): a template whose semantic
//     version is newer upgrades the install, once and in place; an older or
//     equal one, or one whose version is not semantic, keeps it as it is, so
//     an older class never downgrades what a newer one upgraded;
//   - when an install that no workspace needs any more is removed
//     (PlanRemoval): after a grace period measured from the time recorded in
//     AnnotationUnusedSince, never when the grace period is zero;
//   - and, for one process, that decisions about one install are taken one
//     at a time and see the installs the process wrote before its cache does
//     (Writes).
//
// Decide, Pick and PlanRemoval are pure functions; the controllers read the
// objects, call them, and carry out what they return.
package prerequisite
