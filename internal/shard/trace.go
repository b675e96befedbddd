package shard

import (
	"fmt"
	"os"
	"time"
)

// EnvTrace, set to any value, makes a process print on stderr when a
// reconcile starts and stops acting on a unit, for test/shard to prove that
// no two processes act on one unit at once. For tests only.
const EnvTrace = "APIARY_SHARD_TRACE"

// TraceMarker prefixes a trace line: "<marker><enter|exit> <unit key> <kind>
// <unix nanoseconds>".
const TraceMarker = "apiary-shard-trace: "

var tracing = os.Getenv(EnvTrace) != ""

func trace(what string, u Unit) {
	if tracing {
		fmt.Fprintf(os.Stderr, "%s%s %s %s %d\n", TraceMarker, what, u.Key(), u.Kind, time.Now().UnixNano())
	}
}
