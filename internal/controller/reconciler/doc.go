// Package reconciler holds what every Apiary reconciler shares, in the
// Flux shape: a patcher that writes an object's status and metadata once
// per reconcile, the deferred status patch that moves observedGeneration,
// the finalizer written before any work, the end of a reconcile whose
// object is gone, and the read-back of Git delivery into an owner's
// Committed and Synced conditions.
package reconciler
