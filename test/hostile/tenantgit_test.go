package hostile_test

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/test/world"
)

// TestTenantGitDeliversOtherNamespacesDirectly: with --tenant-git, only a
// namespace that names its own GitRepository delivers through Git; every
// other namespace keeps the installation's direct delivery, so its
// workspace is Running without waiting for a commit that never comes (it
// stayed Deploying with Synced=Unknown CommitPending before).
func TestTenantGitDeliversOtherNamespacesDirectly(t *testing.T) {
	g := NewWithT(t)
	switchManager(t, "tenant-git", "--tenant-git", "--git-checkout-dir="+filepath.Join(t.TempDir(), "checkout"))
	ns := tenant(t, "tenant-git-direct")
	w := workspace(ns, "plain", class(t, ns, nil), "c1")
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	got := get(g, w)
	g.Expect(got.Status.Delivery).NotTo(BeNil())
	g.Expect(got.Status.Delivery.Mode).To(Equal(delivery.ModeDirect))
	g.Expect(condition(got, commonv1.CommittedCondition)).To(BeNil(), "nothing is committed for a direct namespace")
	g.Expect(condition(got, commonv1.SyncedCondition)).To(BeNil(), "nothing waits for Flux in a direct namespace")
}
