// Package crash_test proves that Apiary is crash consistent: the manager,
// built from this repository and run as a separate process, is killed with
// SIGKILL at random (seeded) points while Colonies and workspaces roll out,
// change and go, in direct and in Git mode (there also exactly between
// commit and push, after a push it did not hear back from, and during a new
// clone's first fetch); the management API server is restarted under it;
// and child clusters that hang or answer garbage are cycled through an
// in-process manager whose goroutines are counted. Every test checks what a
// user would see afterwards — phases, ServiceSets, ClusterDeployments,
// admissions, finalizers, the Git history and what Flux applied — and
// watches the invariants that must hold at every moment.
//
// The default run is bounded for CI; APIARY_CRASH_FULL=1 runs the full
// size, and the knobs in config.go change single figures. APIARY_CRASH_SEED
// replays a run.
package crash_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
)

var (
	// env is the management control plane; its API server can be
	// restarted (etcd kept). child is the control plane every cluster's
	// kubeconfig points at, unless kubeconfigs says otherwise.
	env, child *testenv.Environment
	// sets is the stand-in's ServiceSet part, for Helm install counts.
	sets *standin.ServiceSets
	// kubeconfigs overrides the kubeconfig of a ClusterDeployment ("ns/name").
	kubeconfigs sync.Map
	// childKubeconfig reaches the child control plane.
	childKubeconfig []byte
	// binary is the apiary manager built from this repository; kubeconfig
	// is the file that reaches env as an administrator.
	binary, kubeconfig string
	// workDir holds the binary, logs and clones; removed at the end
	// unless a test failed.
	workDir string
	cfg     config
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the crash-consistency suite in -short mode")
		return 0
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(world.LogOutput())))
	// The watches of the invariants retry through the API server's
	// restart; client-go logs every retry.
	klog.SetLogger(ctrl.Log.WithName("client-go"))
	cfg = loadConfig()
	fmt.Printf("crash suite: seed %d (replay with APIARY_CRASH_SEED=%d); %s\n", cfg.seed, cfg.seed, cfg)
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	var err error
	if workDir, err = os.MkdirTemp("", "apiary-crash-"); err != nil {
		return fail("creating a work folder", err)
	}
	start := time.Now()
	binary = filepath.Join(workDir, "apiary")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fail("building the manager", fmt.Errorf("%w: %s", err, out))
	}
	fmt.Printf("crash suite: built the manager in %s\n", time.Since(start).Round(time.Millisecond))

	fluxCRDs, err := testenv.FluxCRDDirs()
	if err != nil {
		return fail("finding Flux's CRDs", err)
	}
	if env, err = testenv.Start(testenv.WithCRDDirs(fluxCRDs...), testenv.WithRestartableAPIServer(),
		// An API server with a rollout's watches open does not stop on
		// SIGTERM; 5s before the SIGKILL keeps the restart test short.
		testenv.WithStopTimeout(5*time.Second)); err != nil {
		return fail("starting the management control plane", err)
	}
	defer func() { _ = env.Stop() }()
	if child, err = testenv.Start(testenv.Bare()); err != nil {
		return fail("starting the child control plane", err)
	}
	defer func() { _ = child.Stop() }()
	if childKubeconfig, err = child.Kubeconfig(); err != nil {
		return fail("child kubeconfig", err)
	}
	admin, err := env.Kubeconfig()
	if err != nil {
		return fail("management kubeconfig", err)
	}
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, admin, 0o600); err != nil {
		return fail("writing the management kubeconfig", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	si := &standin.StandIn{KubeconfigFor: func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
		if v, ok := kubeconfigs.Load(cd.Namespace + "/" + cd.Name); ok {
			return v.([]byte)
		}
		return childKubeconfig
	}}
	if sets, _, err = standin.Run(ctx, env.Config, si); err != nil {
		return fail("starting the stand-in", err)
	}
	code := m.Run()
	if code == 0 {
		_ = os.RemoveAll(workDir)
	} else {
		fmt.Fprintf(os.Stderr, "crash suite: logs and clones kept in %s (seed %d)\n", workDir, cfg.seed)
	}
	return code
}
