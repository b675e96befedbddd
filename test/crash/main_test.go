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
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

var (
	// running is the suite's world. env is the management control plane;
	// its API server can be restarted (etcd kept). child is the control
	// plane every cluster's kubeconfig points at, unless a route of running
	// ("ns/name") says otherwise.
	running    *world.Running
	env, child *testenv.Environment
	// sets is the stand-in's ServiceSet part, for Helm install counts.
	sets *standin.ServiceSets
	// childKubeconfig reaches the child control plane.
	childKubeconfig []byte
	// workDir holds the binary, logs and clones; removed at the end
	// unless a test failed.
	workDir string
	cfg     config
)

func TestMain(m *testing.M) {
	stand := &standin.StandIn{}
	world.Main(m, world.World{Name: "crash", Short: true, KeepOnFailure: true, Binary: world.Debug,
		Management: true, Flux: true, Child: true, StandIn: stand.InWorld(),
		ManagementOptions: []testenv.Option{testenv.WithRestartableAPIServer(),
			// An API server with a rollout's watches open does not stop on
			// SIGTERM; 5s before the SIGKILL keeps the restart test short.
			testenv.WithStopTimeout(5 * time.Second)}},
		func(r *world.Running) error {
			// The watches of the invariants retry through the API server's
			// restart; client-go logs every retry.
			klog.SetLogger(ctrl.Log.WithName("client-go"))
			cfg = loadConfig()
			fmt.Printf("crash suite: seed %d (replay with APIARY_CRASH_SEED=%d); %s\n", cfg.seed, cfg.seed, cfg)
			running, env, child, childKubeconfig, sets = r, r.Management, r.Child, r.ChildKubeconfig, stand.ServiceSets()
			workDir = r.Dir
			r.AtEnd(func(code int) int {
				if code != 0 {
					fmt.Fprintf(os.Stderr, "crash suite: seed %d\n", cfg.seed)
				}
				return code
			})
			return nil
		})
}
