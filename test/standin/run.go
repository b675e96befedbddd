package standin

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

// Run starts the stand-in (ClusterDeployments and ServiceSets) in a manager
// of its own on cfg, as k0rdent would run beside Apiary, configured by si
// (its Services are set here). It returns the ServiceSet part, for install
// counts, and a channel closed once the manager stopped after ctx ended.
func Run(ctx context.Context, cfg *rest.Config, si *StandIn) (*ServiceSets, <-chan struct{}, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: apiaryscheme.New(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the stand-in's manager: %w", err)
	}
	sets := &ServiceSets{Workers: si.Workers}
	if err := sets.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up the stand-in's ServiceSets: %w", err)
	}
	si.Services = sets
	if err := si.SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("setting up the stand-in: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return sets, done, nil
}
