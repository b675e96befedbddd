package standin

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/test/world"
)

// InWorld is the stand-in of a test world (world.World.StandIn), its
// knobs set by configure.
func InWorld(configure ...func(*StandIn)) world.StandInFunc {
	s := &StandIn{}
	for _, f := range configure {
		f(s)
	}
	return s.InWorld()
}

// InWorld runs s in a test world (world.World.StandIn), the world routing
// each ClusterDeployment to its cluster (world.Running.KubeconfigFor);
// once the world started, ServiceSets is its ServiceSet part.
func (s *StandIn) InWorld() world.StandInFunc {
	return func(ctx context.Context, cfg *rest.Config, kubeconfigFor func(*k0rdentv1beta1.ClusterDeployment) []byte) error {
		if s.KubeconfigFor == nil {
			s.KubeconfigFor = kubeconfigFor
		}
		if _, _, err := Run(ctx, cfg, s); err != nil {
			return fmt.Errorf("the stand-in: %w", err)
		}
		return nil
	}
}

// ServiceSets is the ServiceSet part of a stand-in started by Run or
// InWorld, for install counts; nil before.
func (s *StandIn) ServiceSets() *ServiceSets {
	sets, _ := s.Services.(*ServiceSets)
	return sets
}
