package manager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/controllers"
	"github.com/apiaryhq/apiary/internal/quota"
)

var (
	clusterDeploymentKind = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ClusterDeployment"}
	serviceSetKind        = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceSet"}
	serviceTemplateKind   = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceTemplate"}
	tenantQuotaKind       = quotav1alpha1.GroupVersion.WithKind("TenantQuota")
)

// controllers lists Apiary's controllers with the kinds each watches.
func (d *deps) controllers() []controllerSetup {
	return []controllerSetup{
		{
			name:     "colony",
			requires: d.requires(clusterDeploymentKind),
			setup: func(mgr ctrl.Manager, opts Options) error {
				r := &controllers.ColonyReconciler{
					Client:            mgr.GetClient(),
					APIReader:         mgr.GetAPIReader(),
					EventRecorder:     mgr.GetEventRecorder("apiary-colony"),
					Bundles:           d.bundles,
					Sink:              d.sink,
					SyncReader:        mgr.GetCache(),
					Children:          d.children,
					InventoryInterval: opts.InventoryInterval,
					Settings:          d.settings(opts),
					Shards:            d.shards,
				}
				if err := r.SetupWithManager(mgr, controllers.ColonyReconcilerOptions{
					MaxConcurrentReconciles: opts.Concurrency.Colony,
				}); err != nil {
					return fmt.Errorf("setting up the Colony controller: %w", err)
				}
				return nil
			},
		},
		{
			name:     "workspaces",
			requires: d.requires(clusterDeploymentKind, serviceSetKind, serviceTemplateKind, tenantQuotaKind),
			setup: func(mgr ctrl.Manager, opts Options) error {
				ledger := &quota.Ledger{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}
				if err := controllers.IndexWorkspaceClassRef(mgr); err != nil {
					return fmt.Errorf("indexing workspaces by class: %w", err)
				}
				if opts.clusterWide() {
					wsc := &controllers.WorkspaceClassReconciler{
						Client:        mgr.GetClient(),
						EventRecorder: mgr.GetEventRecorder("apiary-workspaceclass"),
					}
					if err := wsc.SetupWithManager(mgr, controllers.WorkspaceClassReconcilerOptions{
						MaxConcurrentReconciles: opts.Concurrency.WorkspaceClass,
					}); err != nil {
						return fmt.Errorf("setting up the WorkspaceClass controller: %w", err)
					}
				}
				wsd := &controllers.WorkspaceDeploymentReconciler{
					Client:               mgr.GetClient(),
					APIReader:            mgr.GetAPIReader(),
					EventRecorder:        mgr.GetEventRecorder("apiary-workspacedeployment"),
					Bundles:              d.bundles,
					Sink:                 d.sink,
					SyncReader:           mgr.GetCache(),
					Children:             d.children,
					NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
					Settings:             d.settings(opts),
					Gateway:              types.NamespacedName{Namespace: opts.WorkspaceGatewayNamespace, Name: opts.WorkspaceGatewayName},
					RouteSinks:           d.routes,
					Mesh:                 opts.mesh(),
					Ledger:               ledger,
					Policy:               opts.GPUQueueing,
					Shards:               d.shards,
					ClusterWide:          opts.clusterWide(),

					PrerequisiteGracePeriod: opts.PrerequisiteGracePeriod,
				}
				if err := wsd.SetupWithManager(mgr, controllers.WorkspaceDeploymentReconcilerOptions{
					MaxConcurrentReconciles: opts.Concurrency.WorkspaceDeployment,
				}); err != nil {
					return fmt.Errorf("setting up the WorkspaceDeployment controller: %w", err)
				}
				if !opts.clusterWide() {
					return nil
				}
				tq := &controllers.TenantQuotaReconciler{
					Client:        mgr.GetClient(),
					APIReader:     mgr.GetAPIReader(),
					EventRecorder: mgr.GetEventRecorder("apiary-tenantquota"),
					Ledger:        ledger,
				}
				if err := tq.SetupWithManager(mgr, controllers.TenantQuotaReconcilerOptions{
					MaxConcurrentReconciles: opts.Concurrency.TenantQuota,
				}); err != nil {
					return fmt.Errorf("setting up the TenantQuota controller: %w", err)
				}
				return nil
			},
		},
	}
}
