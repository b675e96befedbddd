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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
)

var (
	clusters *managertest.Clusters
	// binary is the manager built from this repository; kubeconfig reaches
	// the management control plane as an administrator.
	binary, kubeconfig string
	workDir            string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run() // nothing to set up: no benchmark asked for
	}
	var err error
	if workDir, err = os.MkdirTemp("", "apiary-scale-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	if binary = os.Getenv("APIARY_SCALE_BINARY"); binary == "" {
		binary = filepath.Join(workDir, "apiary")
		start := time.Now()
		// Built as the image's binary is (static, stripped), so that its
		// pages in the resident set are the shipped binary's.
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, ".")
		build.Dir = testenv.RepoRoot()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the manager: %v\n%s", err, out)
			return 1
		}
		fmt.Printf("scale: built the manager in %s\n", time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Printf("scale: running the manager %s (APIARY_SCALE_BINARY)\n", binary)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(world.LogOutput())))
	if clusters, err = managertest.StartClusters(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer clusters.Stop()
	admin, err := clusters.Management.Kubeconfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, admin, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
