// Package crashpoint marks the places where a crash of the manager leaves
// state half written (a Git commit made but not pushed, a push that landed
// but was not recorded), so that the crash-consistency tests (test/crash)
// can kill the process exactly there. With APIARY_CRASHPOINTS set (a
// comma-separated list of point names, or "*"), reaching a listed point
// prints "apiary-crashpoint: <name>" on stderr; a point also listed in
// APIARY_CRASHPOINT_PAUSE then blocks until the process is killed. Without
// them, Reach tests one boolean and returns. The points and variables are
// for tests only; docs/crash-safety.md lists them.
package crashpoint

import (
	"fmt"
	"os"
	"strings"
)

// Points of the Git delivery.
const (
	// GitCloneFetch is reached when a new clone (no remote head known yet)
	// starts its first fetch.
	GitCloneFetch = "git-clone-fetch"
	// GitCommit is reached when the changed files are staged, before the
	// commit is made.
	GitCommit = "git-commit"
	// GitPush is reached between the commit and its push.
	GitPush = "git-push"
	// GitPushed is reached once the push succeeded, before the new head is
	// recorded and the owners are told.
	GitPushed = "git-pushed"
)

// Points of a workspace's stop and start.
const (
	// WorkspaceStopRequested is reached once the intent to stop is written,
	// before the paused ServiceSet is delivered.
	WorkspaceStopRequested = "workspace-stop-requested"
	// WorkspaceStopScaled is reached once the workloads are scaled to zero,
	// before the admission and quota are given back.
	WorkspaceStopScaled = "workspace-stop-scaled"
	// WorkspaceStopReleased is reached once the quota charges are released,
	// before the status records the stop.
	WorkspaceStopReleased = "workspace-stop-released"
	// WorkspaceStartScaled is reached once a starting workspace's workloads
	// are scaled back, before its ServiceSet is delivered unpaused.
	WorkspaceStartScaled = "workspace-start-scaled"
)

// Marker prefixes the line printed at a point.
const Marker = "apiary-crashpoint: "

// Environment variables that enable points.
const (
	EnvPoints = "APIARY_CRASHPOINTS"
	EnvPause  = "APIARY_CRASHPOINT_PAUSE"
)

var (
	points = parse(os.Getenv(EnvPoints))
	pause  = parse(os.Getenv(EnvPause))
	// enabled is false unless a variable names a point.
	enabled = len(points)+len(pause) > 0
)

func parse(s string) map[string]bool {
	out := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out[p] = true
		}
	}
	return out
}

// Reach marks that the process reached the point name.
func Reach(name string) {
	if !enabled {
		return
	}
	if !points[name] && !points["*"] && !pause[name] {
		return
	}
	fmt.Fprintf(os.Stderr, "%s%s\n", Marker, name)
	if pause[name] {
		select {} // until killed
	}
}
