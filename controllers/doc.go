// Package controllers holds Apiary's reconcilers: one per kind, each in the
// Flux shape (get, serial patcher, one deferred status patch, finalizer, then
// small named steps), registered with the manager by internal/manager.
package controllers

// Leader election needs leases and events in the manager's own namespace
// only: the Helm chart grants them with a namespaced Role.
