// Package regionalroutes is the controller of the regional clusters that
// serve workspaces' routes in Git mode: it owns the retirement of what a
// regional cluster leaves in Git once its ClusterDeployment is deleted, its
// routes folder and the file of its Flux Kustomization. It sets no
// condition. It imports no other kind's package (kinds_test.go).
package regionalroutes
