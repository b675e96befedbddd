// Package index registers the field indexes of the manager's cache that
// several controllers list by, once, before the controllers start: the
// workspaces of a class, of a cluster, of a regional cluster, of a values
// object, those waiting for a quota, and those a quota counts. A controller's own
// indexes stay with it.
package index

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Indexes of WorkspaceDeployments.
const (
	// WorkspaceClass: the class a workspace names.
	WorkspaceClass = ".spec.workspaceClassRef"
	// WorkspaceCluster: "<ns>/<name>" of the workspace's ClusterDeployment.
	WorkspaceCluster = ".spec.clusterDeploymentRef"
	// WorkspaceValuesFrom: "<Kind>/<name>" of each valuesFrom object.
	WorkspaceValuesFrom = ".spec.valuesFrom"
	// WorkspaceRegional: "<ns>/<name>" of the regional cluster that holds
	// the workspace's routes.
	WorkspaceRegional = ".status.routes.cluster"
	// WorkspaceQuotaWait: "true" for the workspaces whose QuotaReserved
	// condition is False (the queues of quotas).
	WorkspaceQuotaWait = ".status.conditions.quotaReserved"
	// WorkspaceQuotaCharged: the TenantQuotas a workspace's records say
	// count it (not released): the members a preemption for room in a
	// quota chooses from.
	WorkspaceQuotaCharged = ".status.quotaCharges"
)

// True is the value of the condition indexes for a workspace that waits.
const True = "true"

// Register adds the indexes of workspaces to the cache. Call it once,
// before the manager starts.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	ws := func(f func(*workspacesv1.WorkspaceDeployment) []string) client.IndexerFunc {
		return func(o client.Object) []string { return f(o.(*workspacesv1.WorkspaceDeployment)) }
	}
	falseCondition := func(t string) client.IndexerFunc {
		return ws(func(w *workspacesv1.WorkspaceDeployment) []string {
			if conditions.IsFalse(w, t) {
				return []string{True}
			}
			return nil
		})
	}
	for field, f := range map[string]client.IndexerFunc{
		WorkspaceClass: ws(func(w *workspacesv1.WorkspaceDeployment) []string { return []string{w.Spec.WorkspaceClassRef} }),
		WorkspaceCluster: ws(func(w *workspacesv1.WorkspaceDeployment) []string {
			return []string{plan.ClusterKey(w).String()}
		}),
		WorkspaceValuesFrom: ws(func(w *workspacesv1.WorkspaceDeployment) []string {
			out := make([]string, 0, len(w.Spec.ValuesFrom))
			for _, v := range w.Spec.ValuesFrom {
				out = append(out, v.Kind+"/"+v.Name)
			}
			return out
		}),
		WorkspaceRegional: ws(func(w *workspacesv1.WorkspaceDeployment) []string {
			if rs := w.Status.Routes; rs != nil && rs.Cluster != "" {
				return []string{rs.Cluster}
			}
			return nil
		}),
		WorkspaceQuotaWait: falseCondition(workspacesv1.QuotaReservedCondition),
		WorkspaceQuotaCharged: ws(func(w *workspacesv1.WorkspaceDeployment) []string {
			var out []string
			for _, c := range w.Status.QuotaCharges {
				if !c.Released {
					out = append(out, c.Quota)
				}
			}
			return out
		}),
	} {
		if err := indexer.IndexField(ctx, &workspacesv1.WorkspaceDeployment{}, field, f); err != nil {
			return fmt.Errorf("indexing workspaces by %s: %w", field, err)
		}
	}
	return nil
}
