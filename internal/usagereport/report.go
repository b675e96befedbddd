// Package usagereport is `apiary usage`: each tenant's usage over a window
// of UTC days, read from what the TenantQuotas counted (status.usage) and
// what their workspaces' charges hold now, with no Prometheus.
package usagereport

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/usage"
)

// Row is one tenant's usage over the window.
type Row struct {
	// Tenant is the TenantQuota's name.
	Tenant string `json:"tenant"`
	// From and To are the window, UTC days, To exclusive.
	From string `json:"from"`
	To   string `json:"to"`
	// Usage is what was used in the window, up to now.
	Usage commonv1.ResourceUsage `json:"usage"`
	// Complete is false when the window begins before the oldest day the
	// quota keeps (docs/admission.md, "Usage").
	Complete bool `json:"complete"`
}

// Rows computes the report from quotas and every workspace that may hold
// a record of them: a row per quota (of name tenant only, when set), in
// name order.
func Rows(quotas []quotav1alpha1.TenantQuota, workspaces []workspacesv1.WorkspaceDeployment, tenant string,
	from, to, now time.Time) []Row {
	var rows []Row
	members := quota.MembersByQuota(workspaces)
	for i := range quotas {
		q := &quotas[i]
		if tenant != "" && q.Name != tenant {
			continue
		}
		held := quota.HeldUsage(q, members[q.Name])
		u, complete := usage.Window(q.Status.Usage, held, from, to, now)
		rows = append(rows, Row{Tenant: q.Name, From: from.Format(usage.DateLayout), To: to.Format(usage.DateLayout),
			Usage: u, Complete: complete})
	}
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a.Tenant, b.Tenant) })
	return rows
}

// Read lists the TenantQuotas and workspaces and computes the report.
func Read(ctx context.Context, c client.Reader, tenant string, from, to, now time.Time) ([]Row, error) {
	quotas := &quotav1alpha1.TenantQuotaList{}
	if err := c.List(ctx, quotas); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas: %w", err)
	}
	workspaces := &workspacesv1.WorkspaceDeploymentList{}
	if err := c.List(ctx, workspaces); err != nil {
		return nil, fmt.Errorf("listing WorkspaceDeployments: %w", err)
	}
	return Rows(quotas.Items, workspaces.Items, tenant, from, to, now), nil
}
