package controllertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// UnreachableAnnotation on a ClusterDeployment makes the stand-in write a
// kubeconfig that points nowhere.
const UnreachableAnnotation = "test.apiary.dev/unreachable"

var (
	// Env is the management cluster.
	Env *testenv.Environment
	// ChildClient reaches the child control plane.
	ChildClient client.Client
	// serviceSets is the stand-in's ServiceSet part, for install counts.
	serviceSets *standin.ServiceSets
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
func Main(m *testing.M) { world.Main(m, World, setup) }

// World is the world of the controllers' envtests: a management control
// plane with Apiary's CRDs, a bare child control plane every
// ClusterDeployment's kubeconfig points at (unless annotated unreachable or
// regional), a regional control plane with the Gateway API's CRDs, the
// k0rdent stand-in in its own manager, and Apiary's manager in-process with
// its API requests recorded (Requests), the suite's clock (SkewClock,
// UseFakeClock) and the fake activity source (Activity).
var World = world.World{
	Name:       "controller",
	Management: true,
	Child:      true,
	Regional:   true,
	StandIn:    standIn.InWorld(),
	Manager:    runManager,
}

// standIn is the suite's k0rdent stand-in; its ServiceSets count installs.
var standIn = &standin.StandIn{}

// setup keeps the world's parts where the suites' helpers read them and
// routes the clusters annotated unreachable nowhere.
func setup(r *world.Running) error {
	Env = r.Management
	GatewayClient = r.RegionalClient
	ChildClient = r.Child.Client
	serviceSets = standIn.ServiceSets()
	r.Router(func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
		if cd.Annotations[UnreachableAnnotation] == "true" {
			return standin.UnreachableKubeconfig()
		}
		return nil
	})
	return nil
}

// runManager runs Apiary's manager with its API requests recorded (the
// benchmarks count them).
func runManager(ctx context.Context, cfg *rest.Config, _ string) error {
	apiaryConfig := rest.CopyConfig(cfg)
	apiaryConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{Side: "management", next: rt} })
	return manager.Run(ctx, manager.Options{
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
}
