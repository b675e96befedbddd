package activity

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// child is a bare control plane standing for a child cluster, and for the
// management cluster holding its kubeconfig Secret.
var child *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	flag.Parse()
	if fuzzing() {
		return m.Run() // fuzz targets need no control plane
	}
	var err error
	if child, err = testenv.Start(testenv.Bare()); err != nil {
		fmt.Fprintf(os.Stderr, "starting control plane: %v\n", err)
		return 1
	}
	defer func() {
		if err := child.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping control plane: %v\n", err)
		}
	}()
	return m.Run()
}

// fuzzing reports whether the binary runs a fuzz target (or is a fuzz worker).
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}
