// Package crd embeds Apiary's generated CustomResourceDefinitions, so the
// binary can install them into the local sandbox control plane.
package crd

import "embed"

// Bases holds the generated CRDs under bases/.
//
//go:embed bases/*.yaml
var Bases embed.FS
