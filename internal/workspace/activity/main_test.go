package activity

import (
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

// child is a bare control plane standing for a child cluster, and for the
// management cluster holding its kubeconfig Secret.
var child *testenv.Environment

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	// Fuzz targets need no control plane.
	world.Main(m, world.World{Name: "activity", Child: true, Bare: world.Fuzzing},
		func(r *world.Running) error { child = r.Child; return nil })
}
