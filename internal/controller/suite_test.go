package controller_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// unreachableAnnotation on a ClusterDeployment makes the stand-in write a
// kubeconfig that points nowhere.
const unreachableAnnotation = "test.apiary.dev/unreachable"

var (
	// env is the management cluster; child is the control plane every
	// ClusterDeployment's kubeconfig points at.
	env, child  *testenv.Environment
	childClient client.Client
	// serviceSets is the stand-in's ServiceSet part, for install counts.
	serviceSets *standin.ServiceSets
	// regional is the control plane of every regional cluster, with the
	// Gateway API's CRDs (see workspace_routes_helpers_test.go).
	regional *testenv.Environment
)

// installs counts the installs of a release on a cluster by the stand-in.
func installs(ns, cluster, release string) int {
	for _, target := range []string{"default", "cert-manager"} {
		if n := serviceSets.Installs(types.NamespacedName{Namespace: ns, Name: cluster}, target, release); n > 0 {
			return n
		}
	}
	return 0
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting management control plane: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if child, err = testenv.Start(testenv.Bare()); err != nil {
		fmt.Fprintf(os.Stderr, "starting child control plane: %v\n", err)
		return 1
	}
	defer func() { _ = child.Stop() }()
	childClient = child.Client
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
	standinMgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme,
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
		if cd.Annotations[unreachableAnnotation] == "true" {
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
	apiaryConfig := rest.CopyConfig(env.Config)
	apiaryConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{side: "management", next: rt} })
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
			Activity:               activity,
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
