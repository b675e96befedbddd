package gitops_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// TestColonyCommittedSyncedReadyAndPruned follows a Colony through Git: its
// ClusterDeployment is committed, applied by Flux, made ready by the
// stand-in; Committed, Synced and Ready are read back; deleting the Colony
// removes the file and waits until Flux pruned the ClusterDeployment.
func TestColonyCommittedSyncedReadyAndPruned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-colony")
	k0rdentFixtures(t, ns)
	c := colony(ns, "fleet", "a")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())

	c = eventuallyTrue(t, c, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(c.Status.Phase).To(Equal(infrav1.ColonyPhaseReady))
	g.Expect(c.Status.Delivery.Mode).To(Equal("git"))
	rev := revisionOf(c.Status.Delivery)
	g.Expect(rev).NotTo(BeEmpty())
	g.Expect(history(t)[0].Hash.String()).To(Or(Equal(rev), Not(BeEmpty())))
	g.Expect(c.Status.Delivery.SyncedRevision).To(HaveSuffix(rev), "Flux applied the commit (or a later one)")

	file := headFile(t, objectFile(ns, "clusterdeployment", "fleet-a"))
	g.Expect(file).To(ContainSubstring("kind: ClusterDeployment"))
	g.Expect(file).NotTo(ContainSubstring("ownerReferences"), "no cluster UIDs in Git")
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(env.Client.Get(ctx, keyOf(ns, "fleet-a"), cd)).To(Succeed())
	g.Expect(cd.Labels).To(HaveKey("kustomize.toolkit.fluxcd.io/name"), "Flux applied it")

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	eventuallyGone(t, c)
	eventuallyGone(t, cd)
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "fleet-a"))).To(BeEmpty())
}

// TestConcurrentWriterLosesNothing pushes commits of another writer to the
// same branch while Apiary commits Colonies: every commit of both stays in
// the history and nothing is force-pushed.
func TestConcurrentWriterLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-race")
	k0rdentFixtures(t, ns)

	var theirs []string
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sha, err := gitServer.Commit(repoName, branch, "team: tweak", map[string][]byte{
				"teams/" + ns + "/notes.md": []byte(strings.Repeat("x", i+1)),
			})
			if err != nil {
				if msg := err.Error(); strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") ||
					strings.Contains(msg, "failed to update ref") || strings.Contains(msg, "cannot lock ref") {
					continue // Apiary won that race; the other writer retries, as people do
				}
				done <- err
				return
			}
			theirs = append(theirs, sha)
		}
	}()
	var colonies []*infrav1.Colony
	for _, name := range []string{"one", "two", "three"} {
		c := colony(ns, name, "x")
		g.Expect(env.Client.Create(ctx, c)).To(Succeed())
		colonies = append(colonies, c)
	}
	for _, c := range colonies {
		eventuallyTrue(t, c, commonv1.CommittedCondition, commonv1.SyncedCondition)
	}
	close(stop)
	g.Expect(<-done).NotTo(HaveOccurred())
	g.Expect(theirs).NotTo(BeEmpty())

	shas := map[string]bool{}
	for _, c := range history(t) {
		shas[c.Hash.String()] = true
	}
	for _, sha := range theirs {
		g.Expect(shas).To(HaveKey(sha), "the other writer's commit is in the history")
	}
	for _, c := range colonies {
		g.Expect(shas).To(HaveKey(revisionOf(c.Status.Delivery)), "Apiary's commit is in the history")
		g.Expect(headFile(t, objectFile(ns, "clusterdeployment", c.Name+"-x"))).NotTo(BeEmpty())
	}
	g.Expect(headFile(t, "teams/"+ns+"/notes.md")).NotTo(BeEmpty())
}

// TestGitServerDownThenBack takes the Git server down: a new Colony reports
// the server unreachable, then commits and becomes ready once it is back.
func TestGitServerDownThenBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-down")
	k0rdentFixtures(t, ns)
	g.Expect(gitServer.Stop()).To(Succeed())
	restarted := false
	defer func() {
		if !restarted {
			_ = gitServer.Start()
		}
	}()
	c := colony(ns, "patient", "a")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	c = eventuallyReason(t, c, commonv1.CommittedCondition, commonv1.GitUnreachableReason)
	g.Expect(c.Status.Phase).NotTo(Equal(infrav1.ColonyPhaseReady))

	g.Expect(gitServer.Start()).To(Succeed())
	restarted = true
	eventuallyTrue(t, c, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "patient-a"))).NotTo(BeEmpty())
}
