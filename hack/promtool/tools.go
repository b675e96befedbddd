//go:build tools

// Package tools pins github.com/prometheus/prometheus so that `go build` can
// produce the promtool binary that test/monitoring runs (`promtool check
// rules`, `promtool test rules`). It is never imported.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
