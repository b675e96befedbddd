// Package controllers holds Apiary's reconcilers: one per kind, each in the
// Flux shape (get, serial patcher, one deferred status patch, finalizer, then
// small named steps), registered with the manager by internal/manager.
package controllers
