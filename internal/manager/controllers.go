package manager

import (
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/apiaryhq/apiary/internal/controller"
)

// controllers lists Apiary's controllers and runners: internal/controller's
// one list, with this process's configuration.
func (d *deps) controllers(mgr ctrl.Manager, opts Options) ([]controllerSetup, error) {
	entries, err := controller.List(mgr, controller.Deps{
		Bundles: d.bundles, Sink: d.sink, Git: d.git, Children: d.children, Routes: d.routes, Shards: d.shards,
		Settings: d.settings(opts),
	}, controller.Config{
		ColonyWorkers:           opts.Concurrency.Colony,
		WorkspaceClassWorkers:   opts.Concurrency.WorkspaceClass,
		WorkspaceWorkers:        opts.Concurrency.WorkspaceDeployment,
		TenantQuotaWorkers:      opts.Concurrency.TenantQuota,
		InventoryInterval:       opts.InventoryInterval,
		NoCrossNamespaceRefs:    opts.NoCrossNamespaceRefs,
		Gateway:                 types.NamespacedName{Namespace: opts.WorkspaceGatewayNamespace, Name: opts.WorkspaceGatewayName},
		Mesh:                    opts.mesh(),
		Policy:                  opts.GPUQueueing,
		PrerequisiteGracePeriod: opts.PrerequisiteGracePeriod,
		ClusterWide:             opts.clusterWide(),

		ValuesFromServiceAccount: opts.ValuesFromServiceAccount,
	})
	if err != nil {
		return nil, err
	}
	out := make([]controllerSetup, 0, len(entries))
	for _, e := range entries {
		out = append(out, controllerSetup{name: e.Name, requires: e.Requires, setup: e.Setup})
	}
	return out, nil
}
