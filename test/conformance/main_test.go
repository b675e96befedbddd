// Package conformance proves Apiary's API on a real API server: the CRDs accept
// every shipped example, refuse bad manifests with messages a person
// understands, keep every field of the exalsius API, and Apiary's k0rdent types
// are accepted by k0rdent's own CRDs.
package conformance

import (
	"fmt"
	"os"
	"testing"

	"github.com/apiaryhq/apiary/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	var err error
	flux, err := testenv.FluxCRDDirs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	env, err = testenv.Start(testenv.WithCRDDirs(flux...))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting test environment: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping test environment: %v\n", err)
	}
	os.Exit(code)
}
