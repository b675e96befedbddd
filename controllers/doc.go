// Package controllers holds Apiary's reconcilers: one per kind, each in the
// Flux shape (get, serial patcher, one deferred status patch, finalizer, then
// small named steps), registered with the manager by internal/manager.
package controllers

// Leader election holds a Lease in the manager's namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
