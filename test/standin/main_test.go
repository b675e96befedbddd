package standin

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

var (
	// mgmt is the management cluster the stand-in runs against; child is the
	// control plane of the clusters it "provisions".
	mgmt, child     *testenv.Environment
	childKubeconfig []byte
	// running is the suite's world; its routes override the kubeconfig of
	// a ClusterDeployment ("ns/name").
	running *world.Running
	// services plays kcm's ServiceSet part beside the stand-in.
	services *ServiceSets
)

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "standin", Management: true, Child: true, StandIn: runStandIn},
		func(r *world.Running) error {
			running, mgmt, child, childKubeconfig = r, r.Management, r.Child, r.ChildKubeconfig
			return nil
		})
}

// runStandIn runs the stand-in with a ServiceSet part that retries every
// second and holds deletions for 3s, in a manager of its own.
func runStandIn(ctx context.Context, cfg *rest.Config, kubeconfigFor func(*k0rdentv1beta1.ClusterDeployment) []byte) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  apiaryscheme.New(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	services = &ServiceSets{RetryInterval: time.Second, DeletionGrace: 3 * time.Second}
	if err := services.SetupWithManager(mgr); err != nil {
		return err
	}
	s := &StandIn{Services: services, KubeconfigFor: kubeconfigFor}
	if err := s.SetupWithManager(mgr); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return nil
}
