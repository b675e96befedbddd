// Package scale_test holds the benchmarks that run Apiary's manager as a
// process of its own, built from this repository, against a management and
// a child control plane with the k0rdent stand-in, so that what they report
// of memory is the manager's alone: peak and steady RSS, and a heap profile
// at steady state. They also report the time to every ServiceSet and to
// every workspace Running, the requests per workspace to the management and
// to the child cluster (from the manager's own client metrics), and how
// soon a workspace reads Running after its release turned Deployed.
//
// The package has no tests: `go test ./...` only compiles it. See
// docs/benchmarks.md for the commands.
package scale_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

var (
	// clusters is the suite's world: the control planes, the stand-in and
	// the manager built as the image's binary is (static, stripped), so that
	// its pages in the resident set are the shipped binary's.
	clusters *world.Running
	workDir  string
)

// TestMain starts the world only when a benchmark is asked for; the
// manager under test may be another build (APIARY_SCALE_BINARY).
func TestMain(m *testing.M) {
	if binary := os.Getenv("APIARY_SCALE_BINARY"); binary != "" {
		fmt.Printf("scale: running the manager %s (APIARY_SCALE_BINARY)\n", binary)
		_ = os.Setenv(world.BinaryEnv, binary)
	}
	world.Main(m, world.World{Name: "scale", Binary: world.Release, Management: true, Child: true, StandIn: standin.InWorld(func(s *standin.StandIn) {
		// k0rdent's controllers work concurrently; a stand-in reconciling
		// one ServiceSet at a time would bound Apiary and the floor alike.
		s.Workers = envInt("APIARY_SCALE_STANDIN_WORKERS", 8)
	}),
		Bare: func() bool {
			f := flag.Lookup("test.bench")
			return f == nil || f.Value.String() == "" // nothing to set up: no benchmark asked for
		}},
		func(r *world.Running) error {
			clusters, workDir = r, r.Dir
			return nil
		})
}
