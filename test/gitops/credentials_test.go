package gitops_test

import (
	"context"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// updateSecret replaces the data of a Secret in Flux's namespace.
func updateSecret(t *testing.T, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{}
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: fluxNS, Name: name}, s); err != nil {
			return err
		}
		s.Data, s.StringData = data, nil
		return env.Client.Update(context.Background(), s)
	}, timeout).Should(Succeed())
}

// addCluster adds a cluster to a Colony, which changes what Apiary commits.
func addCluster(t *testing.T, c *infrav1.Colony, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, colony("", "", name).Spec.ColonyClusters...)
		return env.Client.Update(context.Background(), c)
	}, timeout).Should(Succeed())
}

// lsRemote lists the repository's refs with a password.
func lsRemote(password string) error {
	r := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{gitServer.RepoURL(repoName)}})
	_, err := r.List(&gogit.ListOptions{Auth: &githttp.BasicAuth{Username: gitUser, Password: password}})
	return err
}

// TestCredentialsRotateWithoutRestart changes the Git server's password:
// Apiary's next push is refused (GitAuthFailed) and the old password stops
// working; once the credentials Secret (shared with Flux's GitRepository)
// holds the new one, the queued change is pushed at once and Flux applies
// it, with no restart of the manager.
func TestCredentialsRotateWithoutRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-rotate")
	k0rdentFixtures(t, ns)
	c := colony(ns, "rotate", "a")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	c = eventuallyTrue(t, c, commonv1.CommittedCondition, commonv1.SyncedCondition)
	before := revisionOf(c.Status.Delivery)

	const rotated = "second-password"
	g.Expect(lsRemote(gitPassword)).To(Succeed())
	gitServer.SetBasicAuth(gitUser, rotated)
	g.Expect(lsRemote(gitPassword)).To(MatchError(ContainSubstring("authentication required")), "the old password stops working")
	addCluster(t, c, "b")
	c = eventuallyReason(t, c, commonv1.CommittedCondition, commonv1.GitAuthFailedReason)
	g.Expect(apimeta.FindStatusCondition(c.Status.Conditions, commonv1.CommittedCondition).Message).NotTo(ContainSubstring(gitPassword))

	updateSecret(t, credentialsSecret, map[string][]byte{"username": []byte(gitUser), "password": []byte(rotated)})
	c = eventuallyTrue(t, c, commonv1.CommittedCondition, commonv1.SyncedCondition)
	g.Expect(revisionOf(c.Status.Delivery)).NotTo(Equal(before))
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "rotate-b"))).To(ContainSubstring("kind: ClusterDeployment"))
	g.Expect(lsRemote(rotated)).To(Succeed())

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	eventuallyGone(t, c)
}

// TestBrokenSigningKeyStopsCommits puts garbage into the signing key
// Secret: nothing is committed, Committed says InvalidSigningKey naming the
// Secret and nothing of its data; the repaired Secret is read again without
// a restart, and the change is committed, signed with the SSH key, which
// git verify-commit accepts.
func TestBrokenSigningKeyStopsCommits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-signing")
	k0rdentFixtures(t, ns)
	c := colony(ns, "signed", "a")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	c = eventuallyTrue(t, c, commonv1.CommittedCondition)
	good := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: signingSecret}, good)).To(Succeed())

	updateSecret(t, signingSecret, map[string][]byte{"identity": []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-at-all\n")})
	commits := len(history(t))
	addCluster(t, c, "b")
	c = eventuallyReason(t, c, commonv1.CommittedCondition, commonv1.InvalidSigningKeyReason)
	msg := apimeta.FindStatusCondition(c.Status.Conditions, commonv1.CommittedCondition).Message
	g.Expect(msg).To(ContainSubstring("signing key Secret " + fluxNS + "/" + signingSecret))
	g.Expect(msg).To(ContainSubstring(`"identity" is not an SSH private key`))
	g.Expect(msg).NotTo(ContainSubstring("not-a-key-at-all"))
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "signed-b"))).To(BeEmpty(), "nothing was committed")
	g.Expect(len(history(t))).To(Equal(commits))

	updateSecret(t, signingSecret, good.Data)
	c = eventuallyTrue(t, c, commonv1.CommittedCondition)
	rev := revisionOf(c.Status.Delivery)
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "signed-b"))).NotTo(BeEmpty())
	g.Expect(testenv.VerifySSHCommit(repoDir(), rev, authorEmail, signingPublicKey)).To(Succeed())

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	eventuallyGone(t, c)
}
