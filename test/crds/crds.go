// Package crds embeds the CRDs of the foreign kinds Apiary works with, as
// generated from Apiary's own wire-compatible types, for tests and the sandbox.
package crds

import "embed"

// K0rdent holds the k0rdent CRDs generated from api/k0rdent/v1beta1.
//
//go:embed k0rdent/*.yaml
var K0rdent embed.FS
