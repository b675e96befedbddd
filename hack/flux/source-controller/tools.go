//go:build tools

// Package tools pins github.com/fluxcd/source-controller so that `go build`
// can produce the controller binary Apiary's tests run. It is never imported.
package tools

import _ "github.com/fluxcd/source-controller"
