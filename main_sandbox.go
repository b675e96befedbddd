//go:build sandbox

package main

import "github.com/apiaryhq/apiary/internal/sandbox"

// sandboxMain runs `apiary sandbox`: the manager against an embedded local
// control plane with the k0rdent stand-in (make run).
func sandboxMain(args []string) int { return sandbox.Main(args) }
