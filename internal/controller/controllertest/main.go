package controllertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// UnreachableAnnotation on a ClusterDeployment makes the stand-in write a
// kubeconfig that points nowhere.
const UnreachableAnnotation = "test.apiary.dev/unreachable"

var (
	// Env is the management cluster; child is the control plane every
	// ClusterDeployment's kubeconfig points at.
	Env, child *testenv.Environment
	// ChildClient reaches the child control plane.
	ChildClient client.Client
	// serviceSets is the stand-in's ServiceSet part, for install counts.
	serviceSets *standin.ServiceSets
	// regional is the control plane of every regional cluster, with the
	// Gateway API's CRDs (see routes.go).
	regional *testenv.Environment
)

// Installs counts the installs of a release on a cluster by the stand-in.
func Installs(ns, cluster, release string) int {
	for _, target := range []string{"default", "cert-manager"} {
		if n := serviceSets.Installs(types.NamespacedName{Namespace: ns, Name: cluster}, target, release); n > 0 {
			return n
		}
	}
	return 0
}

// Main starts the envtest world, runs the package's tests in it and exits
// with their result. A kind's suite_test.go is one call to it:
//
//	func TestMain(m *testing.M) { controllertest.Main(m) }
func Main(m *testing.M) {
	os.Exit(run(m))
}

// run starts the world of the controllers' envtests and runs m in it: a
// management control plane with Apiary's CRDs, a bare child control plane
// every ClusterDeployment's kubeconfig points at (unless annotated
// unreachable or regional), a regional control plane with the Gateway API's
// CRDs, the k0rdent stand-in in its own manager, and Apiary's manager with
// its API requests recorded (Requests), the lifecycle clock (SkewClock) and
// the fake activity source (Activity). It is the one function to replace
// when the suites move onto another harness.
func run(m *testing.M) int {
	var err error
	if Env, err = testenv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting management control plane: %v\n", err)
		return 1
	}
	defer func() { _ = Env.Stop() }()
	if child, err = testenv.Start(testenv.Bare()); err != nil {
		fmt.Fprintf(os.Stderr, "starting child control plane: %v\n", err)
		return 1
	}
	defer func() { _ = child.Stop() }()
	ChildClient = child.Client
	childKubeconfig, err := child.Kubeconfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "child kubeconfig: %v\n", err)
		return 1
	}
	gatewayCRDs, err := testenv.GatewayAPICRDs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Gateway API CRDs: %v\n", err)
		return 1
	}
	if regional, err = testenv.Start(testenv.Bare(), testenv.WithCRDDirs(gatewayCRDs...)); err != nil {
		fmt.Fprintf(os.Stderr, "starting regional control plane: %v\n", err)
		return 1
	}
	defer func() { _ = regional.Stop() }()
	regionalKubeconfig, err := regional.Kubeconfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "regional kubeconfig: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl.SetLogger(zap.New(zap.WriteTo(logOutput())))

	// The k0rdent stand-in runs in its own manager, as k0rdent would.
	standinMgr, err := ctrl.NewManager(Env.Config, ctrl.Options{Scheme: Env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "stand-in manager: %v\n", err)
		return 1
	}
	serviceSets = &standin.ServiceSets{}
	if err := serviceSets.SetupWithManager(standinMgr); err != nil {
		fmt.Fprintf(os.Stderr, "stand-in ServiceSets: %v\n", err)
		return 1
	}
	si := &standin.StandIn{Services: serviceSets, KubeconfigFor: func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
		if cd.Annotations[UnreachableAnnotation] == "true" {
			return standin.UnreachableKubeconfig()
		}
		if cd.Annotations[regionalAnnotation] == "true" {
			return regionalKubeconfig
		}
		return childKubeconfig
	}}
	if err := si.SetupWithManager(standinMgr); err != nil {
		fmt.Fprintf(os.Stderr, "stand-in: %v\n", err)
		return 1
	}
	go func() { _ = standinMgr.Start(ctx) }()

	// Apiary's own API requests are counted, for the benchmarks.
	apiaryConfig := rest.CopyConfig(Env.Config)
	apiaryConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{Side: "management", next: rt} })
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, manager.Options{
			RestConfig:             apiaryConfig,
			ChildRESTConfig:        childRESTConfig,
			MetricsBindAddress:     "0",
			HealthProbeBindAddress: "0",
			Concurrency:            manager.DefaultConcurrency,
			CRDCheckInterval:       time.Second,
			InventoryInterval:      time.Minute,
			Logger:                 ctrl.Log.WithName("apiary"),
			Clock:                  suiteClock,
			Activity:               Activity,
		})
	}()
	code := m.Run()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "manager did not stop within 30s")
	}
	return code
}

// logOutput is where the managers log: nowhere, unless APIARY_TEST_LOGS is set.
func logOutput() io.Writer {
	if os.Getenv("APIARY_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}
