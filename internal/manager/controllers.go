package manager

import (
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/apiaryhq/apiary/internal/controller"
	"github.com/apiaryhq/apiary/internal/workspace/activity"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
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
		PreemptionRequeue:       opts.PreemptionRequeue,
		PrerequisiteGracePeriod: opts.PrerequisiteGracePeriod,
		ClusterWide:             opts.clusterWide(),

		ValuesFromServiceAccount: opts.ValuesFromServiceAccount,
		Clock:                    opts.Clock,
		Activity:                 d.activity(opts),
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

// activity reads workspaces' last activity for classes with an idle
// policy: their endpoints through the child API servers' Service proxy,
// and GPU utilisation from Prometheus when --activity-prometheus-url is set.
func (d *deps) activity(opts Options) lifecycle.ActivityReader {
	if opts.Activity != nil {
		return opts.Activity
	}
	ep := &activity.Endpoint{Clusters: d.children, Timeout: opts.ActivityProbeTimeout}
	sources := map[activity.Format]activity.Source{activity.JupyterStatus: ep, activity.CodeServerHealthz: ep}
	if opts.ActivityPrometheusURL != "" {
		sources[activity.PrometheusGPU] = &activity.Prometheus{URL: opts.ActivityPrometheusURL, Timeout: opts.ActivityProbeTimeout,
			Metric: opts.ActivityPrometheusMetric, NamespaceLabel: opts.ActivityPrometheusNamespaceLabel}
	}
	return &activity.Reader{Children: d.children, Clock: opts.Clock, Prober: &activity.Prober{Sources: sources,
		MaxConcurrent: opts.ActivityProbeConcurrency, Timeout: opts.ActivityProbeTimeout}}
}
