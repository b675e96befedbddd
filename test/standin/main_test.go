package standin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

var (
	// mgmt is the management cluster the stand-in runs against; child is the
	// control plane of the clusters it "provisions".
	mgmt, child     *testenv.Environment
	childKubeconfig []byte
	// kubeconfigs overrides the kubeconfig of a ClusterDeployment ("ns/name").
	kubeconfigs sync.Map
	// services plays kcm's ServiceSet part beside the stand-in.
	services *ServiceSets
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run() // fuzz workers run pure fuzz targets only: no control planes
	}
	var err error
	if mgmt, err = testenv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting management control plane: %v\n", err)
		return 1
	}
	defer stop("management", mgmt)
	if child, err = testenv.Start(testenv.Bare()); err != nil {
		fmt.Fprintf(os.Stderr, "starting child control plane: %v\n", err)
		return 1
	}
	defer stop("child", child)
	if childKubeconfig, err = child.Kubeconfig(); err != nil {
		fmt.Fprintf(os.Stderr, "child kubeconfig: %v\n", err)
		return 1
	}

	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:  mgmt.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating manager: %v\n", err)
		return 1
	}
	services = &ServiceSets{RetryInterval: time.Second, DeletionGrace: 3 * time.Second}
	if err := services.SetupWithManager(mgr); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	s := &StandIn{
		Services:        services,
		ChildKubeconfig: childKubeconfig,
		KubeconfigFor: func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
			if v, ok := kubeconfigs.Load(cd.Namespace + "/" + cd.Name); ok {
				return v.([]byte)
			}
			return childKubeconfig
		},
	}
	if err := s.SetupWithManager(mgr); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return m.Run()
}

func stop(name string, env *testenv.Environment) {
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping %s control plane: %v\n", name, err)
	}
}
