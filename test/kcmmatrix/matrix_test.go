// Package kcmmatrix proves Apiary against each kcm release it supports: on
// an API server holding that release's real CRDs, what Apiary writes applies
// (server-side apply, strict field validation) and keeps every field, and
// what that kcm writes into the status reads back through Apiary's types
// and readers as kcm means it. The CRDs are read from the shared folder
// beside the repository (testenv.SharedK0rdentCRDDir); they are never
// copied into the project.
package kcmmatrix

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/apiaryhq/apiary/internal/testenv"
)

func init() { ctrl.SetLogger(logr.Discard()) }

// release is one kcm release of the matrix and what its ServiceSet status
// may hold beyond kcm 1.8's.
type release struct {
	version string
	// deleted: the Deleted service state and the ServicesInReadyState
	// condition on ServiceSets (kcm 1.11).
	deleted bool
	// hash: status.services[].lastDeployedHash (kcm 1.12).
	hash bool
}

// Releases is the matrix: the kcm releases Apiary supports (README,
// "Supported k0rdent releases"). Each test starts one API server; the tests
// run one after the other.
var (
	kcm180  = release{version: "v1.8.0"}
	kcm190  = release{version: "v1.9.0"}
	kcm1114 = release{version: "v1.11.4", deleted: true}
	kcm112  = release{version: "v1.12.0-rc2", deleted: true, hash: true}
)

func TestKCMv1_8_0(t *testing.T)     { checkRelease(t, kcm180) }
func TestKCMv1_9_0(t *testing.T)     { checkRelease(t, kcm190) }
func TestKCMv1_11_4(t *testing.T)    { checkRelease(t, kcm1114) }
func TestKCMv1_12_0rc2(t *testing.T) { checkRelease(t, kcm112) }

// checkRelease starts an API server with the release's CRDs and runs the
// write and read checks against it, then the stand-in playing that kcm. Without the shared CRDs the test is
// skipped, as the conformance suite does.
func checkRelease(t *testing.T, r release) {
	dir, ok := testenv.SharedK0rdentCRDDir(r.version)
	if !ok {
		t.Skipf("k0rdent %s CRDs are not available (looked in %s)", r.version, dir)
	}
	start := time.Now()
	env, err := testenv.Start(testenv.WithoutK0rdentCRDs(), testenv.WithCRDDirs(dir))
	if err != nil {
		t.Fatalf("starting an API server with the k0rdent %s CRDs: %v", r.version, err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
		t.Logf("kcm %s: %s with the API server", r.version, time.Since(start).Round(time.Millisecond))
	}()
	ns := env.NewNamespace(t, "kcm")
	objs := apiaryWrites(t, ns)
	t.Run("apiary-writes-apply", func(t *testing.T) { checkWrites(t, env, objs) })
	t.Run("kcm-status-reads", func(t *testing.T) { checkReads(t, env, r, objs) })
	t.Run("newer-shapes-refused", func(t *testing.T) { checkNewerShapes(t, env, r, objs) })
	t.Run("standin-reports", func(t *testing.T) { checkStandIn(t, env, r, objs) })
}
