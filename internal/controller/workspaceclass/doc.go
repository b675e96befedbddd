// Package workspaceclass is the controller of the WorkspaceClass kind
// (workspaces.exalsius.ai): it owns a class's status, its validity (its
// ServiceTemplates, injection paths and reserved values) and its finalizer,
// which keeps a class that workspaces use from disappearing under them. It
// imports no other kind's package (kinds_test.go).
package workspaceclass
