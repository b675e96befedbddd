// Package conformance proves Apiary's API on a real API server: the CRDs accept
// every shipped example, refuse bad manifests with messages a person
// understands, keep every field of the exalsius API, and Apiary's k0rdent types
// are accepted by k0rdent's own CRDs.
package conformance

import (
	"testing"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "conformance", Management: true, Flux: true}, func(r *world.Running) error {
		env = r.Management
		return nil
	})
}
