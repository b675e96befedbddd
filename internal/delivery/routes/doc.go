// Package routes delivers workspaces' access routes to regional clusters:
// one delivery sink per regional cluster, applying directly through the
// regional cluster's client (Direct) or committing to a folder of the Git
// repository that a Flux Kustomization of its own applies there (Git),
// which it also retires when the regional cluster goes.
package routes

// OwnerKind is the delivery owner kind of a workspace's routes.
const OwnerKind = "WorkspaceRoutes"
