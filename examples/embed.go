// Package examples embeds the example manifests, so the sandbox can apply
// them from the binary.
package examples

import "embed"

// Quickstart holds the exalsius quick start manifests.
//
//go:embed quickstart/*.yaml
var Quickstart embed.FS
