package hostile_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
)

// Test5GitRefusesWhatTheServerWould: in Git mode every tenant's objects
// go to one folder that one Flux Kustomization applies, so one object the
// API server refuses would stop the apply for all of them. One tenant
// tries two: a workspace whose two valuesFrom Secrets of 600 KiB each make
// its values more than the 1 MiB the server stores, and a Colony entry
// whose ClusterDeployment, rendered by the tenant's ConfigMap bundle, has
// a field the schema does not declare. The workspace fails naming the
// bound, the Colony reports ObjectRefused naming the field, and nothing of
// either is committed; the other tenant's workspace is committed, and
// committed again when it changes.
func Test5GitRefusesWhatTheServerWould(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gitManager(t)
	hostile, other := tenant(t, "git-hostile"), tenant(t, "git-other")
	mayRead(t, hostile, "first", "second")
	part := strings.Repeat("v", 600*1024) // each under 1 MiB, together over
	for _, name := range []string{"first", "second"} {
		secret(t, hostile, name, name+": "+part)
	}
	huge := workspace(hostile, "huge", class(t, hostile, nil), "c1")
	huge.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "first"}, {Kind: "Secret", Name: "second"}}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: hostile, Name: "unknown-field"}, Data: map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: unknown-field\nversion: 0.1.0\n",
		"templates__cd.yaml": `apiVersion: k0rdent.mirantis.com/v1beta1
kind: ClusterDeployment
metadata: {name: "{{ .Input.clusterDeploymentName }}", namespace: "{{ .Input.colony.namespace }}"}
spec: {template: tpl, credential: cred, config: {}, notInTheSchema: true}
`}})
	bad := entry("bad")
	bad.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: "unknown-field"}}
	fine := workspace(other, "fine", class(t, other, nil), "c1")
	fine.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello"}`)}
	create(t, huge)
	broken := colony(t, hostile, "broken", bad)
	create(t, fine)

	committed := func(g Gomega) string {
		c := condition(get(g, fine), commonv1.CommittedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		return c.Message
	}
	var first string
	g.Eventually(func(g Gomega) { first = committed(g) }).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, huge)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), got.Status.Message)
		g.Expect(got.Status.Message).To(ContainSubstring("1048576"), "the message says the bound")
		g.Expect(got.Status.Message).NotTo(ContainSubstring("vvvv"), "no value in the status")
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("the huge workspace: %s", get(g, huge).Status.Message)
	g.Eventually(func(g Gomega) {
		got := getColony(g, broken)
		c := apimeta.FindStatusCondition(got.Status.Conditions, commonv1.CommittedCondition)
		g.Expect(c).NotTo(BeNil(), "%v", got.Status.Conditions)
		g.Expect(c.Reason).To(Equal(commonv1.ObjectRefusedReason), c.Message)
		g.Expect(c.Message).To(And(ContainSubstring("ClusterDeployment "+hostile+"/broken-bad"), ContainSubstring("notInTheSchema")))
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("the broken Colony: %s", apimeta.FindStatusCondition(getColony(g, broken).Status.Conditions, commonv1.CommittedCondition).Message)

	files := repoFiles(g)
	g.Expect(files).To(ContainElement(ContainSubstring(other)), "the other tenant's objects are committed")
	for _, f := range files {
		g.Expect(f).NotTo(Or(ContainSubstring("huge"), ContainSubstring("broken")), "nothing of the hostile tenant's is committed")
	}

	// The other tenant's changes keep reaching the repository.
	w := get(g, fine)
	w.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello again"}`)}
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(committed(g)).NotTo(Equal(first), "a commit of the change")
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// gitManager runs, for the rest of the test, a manager that delivers
// through Git to the shared repository, named by a Flux GitRepository
// (no Flux runs: the test reads the repository).
func gitManager(t *testing.T) {
	t.Helper()
	ns := env.NewNamespace(t, "flux")
	create(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": ns, "name": "fleet"},
		"spec": map[string]any{"url": gitServer.RepoURL(tenantRepo), "interval": "10m",
			"ref": map[string]any{"branch": "main"}},
	}})
	_, recipient, err := sopsenc.GenerateAgeKey()
	if err != nil {
		t.Fatal(err)
	}
	switchManager(t, "git", "--delivery=git", "--git-repository="+ns+"/fleet", "--git-path=apiary",
		"--sops-age-recipients="+recipient, "--git-commit-window=300ms", "--git-checkout-dir="+filepath.Join(t.TempDir(), "checkout"))
}

// repoFiles lists the files at the head of the shared repository.
func repoFiles(g Gomega) []string {
	r, err := gogit.PlainOpen(filepath.Join(gitServer.Root(), tenantRepo))
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := r.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	tree, err := c.Tree()
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	w := tree.Files()
	defer w.Close()
	for f, err := w.Next(); err == nil; f, err = w.Next() {
		out = append(out, f.Name)
	}
	return out
}
