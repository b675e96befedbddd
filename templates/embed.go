// Package templates holds Apiary's built-in template bundles. Each folder is
// a small Helm chart (Chart.yaml, values.yaml, optional values.schema.json,
// templates/) that internal/render loads and renders; the folders are
// embedded in the manager binary so the defaults need no files at run time.
package templates

import "embed"

// FS holds the built-in bundles, one top-level folder per bundle, named
// after the bundle.
//
//go:embed all:colony-cluster all:workspace-serviceset all:workspace-prerequisite all:workspace-routes all:routes-kustomization
var FS embed.FS
