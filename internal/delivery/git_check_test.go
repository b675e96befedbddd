package delivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/delivery/check"
)

// serviceSet returns a desired ServiceSet of the k0rdent test CRD; cluster
// is the value of spec.cluster, of whatever type.
func serviceSet(ns, name string, cluster any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k0rdent.mirantis.com/v1beta1", "kind": "ServiceSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"cluster":  cluster,
			"provider": map[string]any{"name": "kcm-projectsveltos"},
			"services": []any{map[string]any{"name": "app", "namespace": "app", "template": "app-1-0-0"}},
		},
	}}
}

// largeValues is a values Secret built from two values, each under 1 MiB,
// that together hold more than a Secret may.
func largeValues(ns string) *unstructured.Unstructured {
	part := strings.Repeat("v", 600*1024)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "values", "namespace": ns},
		"stringData": map[string]any{"first.yaml": "a: " + part, "second.yaml": "b: " + part},
	}}
}

// dryRuns returns the dry-run requests among reqs.
func dryRuns(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if strings.Contains(r, "dryRun=All") {
			out = append(out, r)
		}
	}
	return out
}

// checkedGit starts a Git sink that seals Secrets and dry-runs objects on
// the test's API server through the manager's client, whose requests the
// request log records.
func checkedGit(t *testing.T, srv *gitServer) *Git {
	return startGit(t, srv, func(o *GitOptions) {
		o.Encrypter = &fakeSealer{}
		o.Validator = &check.DryRun{Client: mgr.GetClient()}
	})
}

// TestGitApply_RefusedObjectsFailTheirOwnerOnly: a values Secret over 1 MiB
// made of two values and a ServiceSet with a field of the wrong type would
// fail the Flux Kustomization that applies the folder for everyone. Their
// owners get an Invalid error naming the object and the field, nothing of
// theirs reaches the repository, and an owner applied in the same window
// is committed.
func TestGitApply_RefusedObjectsFailTheirOwnerOnly(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "git-refuse")
	srv := startGitServer(t)
	s := checkedGit(t, srv)
	large, invalid, good := testOwner(ns, "large"), testOwner(ns, "invalid"), testOwner(ns, "good")
	largeSet := func() []*unstructured.Unstructured { return []*unstructured.Unstructured{largeValues(ns)} }
	invalidSet := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{serviceSet(ns, "invalid", int64(5))}
	}
	goodSet := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{serviceSet(ns, "good", "cluster-a"), configMap(ns, "good", map[string]string{"k": "v"})}
	}
	before := len(history(t, srv))

	var errLarge, errInvalid error
	var resLarge, resInvalid *Result
	g.Eventually(func(g Gomega) {
		resLarge, errLarge = s.Apply(ctx, large, largeSet(), nil)
		g.Expect(errors.Is(errLarge, ErrNotOpen)).To(BeFalse(), "the clone opens")
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	resInvalid, errInvalid = s.Apply(ctx, invalid, invalidSet(), nil)
	resGood, errGood := s.Apply(ctx, good, goodSet(), nil)
	g.Expect(errGood).NotTo(HaveOccurred())
	g.Expect(resGood.Pending).To(BeTrue(), "the good owner's objects are queued in the same window")

	t.Logf("refusals:\n%v\n%v", errLarge, errInvalid)
	g.Expect(check.IsRefused(errLarge)).To(BeTrue(), "error: %v", errLarge)
	g.Expect(apierrors.IsInvalid(errLarge)).To(BeTrue(), "a refusal looks like the server's Invalid answer")
	g.Expect(errLarge.Error()).To(And(ContainSubstring("Secret "+ns+"/values"), ContainSubstring("data: Too long")))
	g.Expect(errLarge.Error()).NotTo(ContainSubstring("vvvv"), "no value in the message")
	g.Expect(resLarge.Pending).To(BeFalse())
	g.Expect(resLarge.Inventory.Entries).To(BeEmpty())

	g.Expect(check.IsRefused(errInvalid)).To(BeTrue(), "error: %v", errInvalid)
	g.Expect(apierrors.IsInvalid(errInvalid)).To(BeTrue())
	g.Expect(errInvalid.Error()).To(And(ContainSubstring("ServiceSet "+ns+"/invalid"), ContainSubstring(".spec.cluster")))
	g.Expect(resInvalid.Pending).To(BeFalse())
	g.Expect(resInvalid.Inventory.Entries).To(BeEmpty())

	resGood = applyUntilCommitted(t, s, good, goodSet, nil)
	g.Expect(ids(resGood)).To(ConsistOf(ns+"_good_k0rdent.mirantis.com_ServiceSet", ns+"_good__ConfigMap"))
	g.Expect(history(t, srv)).To(HaveLen(before + 1))
	g.Expect(remoteFile(t, srv, objPath(ns, "ServiceSet", "good"))).To(ContainSubstring("cluster: cluster-a"))
	g.Expect(remoteFile(t, srv, objPath(ns, "ServiceSet", "invalid"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "Secret", "values"))).To(BeEmpty())
	g.Expect(containsAny(allBlobs(t, srv), LabelOwnerName+": invalid")).To(BeFalse())
	g.Expect(containsAny(allBlobs(t, srv), LabelOwnerName+": large")).To(BeFalse())

	// The refused owners stay refused, at no request, and nothing of theirs
	// is committed later.
	reqs := requests.during(func() {
		_, errLarge = s.Apply(ctx, large, largeSet(), nil)
		_, errInvalid = s.Apply(ctx, invalid, invalidSet(), nil)
	})
	g.Expect(check.IsRefused(errLarge)).To(BeTrue())
	g.Expect(check.IsRefused(errInvalid)).To(BeTrue())
	g.Expect(reqs).To(BeEmpty())
	g.Consistently(func() int { return len(history(t, srv)) }).WithTimeout(time.Second).Should(Equal(before + 1))
}

// TestGitApply_ARefusedChangeKeepsTheCommittedVersion: an owner whose
// committed ServiceSet changes to an invalid one keeps the committed
// version, in Git and in its inventory, until its spec is fixed.
func TestGitApply_ARefusedChangeKeepsTheCommittedVersion(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-refuse-change")
	srv := startGitServer(t)
	s := checkedGit(t, srv)
	owner := testOwner(ns, "ws")
	var cluster any = "cluster-a"
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{serviceSet(ns, "ss", cluster)}
	}
	res := applyUntilCommitted(t, s, owner, set, nil)
	commits := len(history(t, srv))

	cluster = map[string]any{"name": "cluster-b"}
	again, err := s.Apply(context.Background(), owner, set(), res.Inventory)
	g.Expect(check.IsRefused(err)).To(BeTrue(), "error: %v", err)
	g.Expect(again.Pending).To(BeFalse())
	g.Expect(again.Inventory).To(Equal(res.Inventory), "the committed object stays and is not pruned")
	g.Consistently(func() int { return len(history(t, srv)) }).WithTimeout(time.Second).Should(Equal(commits))
	g.Expect(remoteFile(t, srv, objPath(ns, "ServiceSet", "ss"))).To(ContainSubstring("cluster: cluster-a"))

	cluster = "cluster-b"
	res = applyUntilCommitted(t, s, owner, set, again.Inventory)
	g.Expect(remoteFile(t, srv, objPath(ns, "ServiceSet", "ss"))).To(ContainSubstring("cluster: cluster-b"))
}

// TestGitApply_DryRunsOnlyChangedObjects: an object costs one dry run when
// its content changes and none when it does not, queued or committed.
func TestGitApply_DryRunsOnlyChangedObjects(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "git-dryrun")
	srv := startGitServer(t)
	s := checkedGit(t, srv)
	owner := testOwner(ns, "ws")
	cluster := "cluster-a"
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{serviceSet(ns, "ss", cluster), configMap(ns, "cm", map[string]string{"k": "v"})}
	}
	g.Eventually(func() error { _, err := s.Apply(ctx, owner, nil, nil); return err }).
		WithTimeout(20*time.Second).Should(Succeed(), "the clone opens")

	var res *Result
	var err error
	reqs := requests.during(func() { res, err = s.Apply(ctx, owner, set(), nil) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pending).To(BeTrue())
	g.Expect(dryRuns(reqs)).To(HaveLen(2), "one dry run per new object: %v", reqs)
	g.Expect(writes(reqs)).To(HaveLen(2), "and no other write: %v", reqs)

	reqs = requests.during(func() { res, err = s.Apply(ctx, owner, set(), res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs).To(BeEmpty(), "queued content is not checked again")

	res = applyUntilCommitted(t, s, owner, set, res.Inventory)
	reqs = requests.during(func() { res, err = s.Apply(ctx, owner, set(), res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pending).To(BeFalse())
	g.Expect(reqs).To(BeEmpty(), "a steady state costs no request")

	cluster = "cluster-b"
	reqs = requests.during(func() { res, err = s.Apply(ctx, owner, set(), res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(Equal([]string{ns + "_ss_k0rdent.mirantis.com_ServiceSet"}))
	g.Expect(dryRuns(reqs)).To(HaveLen(1), "only the changed object is checked: %v", reqs)
	g.Expect(reqs).To(HaveLen(1))
}

// TestDryRun_Answers: what the API server's answers to a dry run mean, one
// request each.
func TestDryRun_Answers(t *testing.T) {
	skipWithoutEnv(t)
	ns := env.NewNamespace(t, "dryrun")
	v := &check.DryRun{Client: mgr.GetClient()}
	noProvider := serviceSet(ns, "no-provider", "c")
	unstructured.RemoveNestedField(noProvider.Object, "spec", "provider")
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		refused string // a part of the message; "" when let through
	}{
		{"valid", serviceSet(ns, "ok", "c"), ""},
		{"a required field missing", noProvider, "spec.provider: Required value"},
		{"a field of the wrong type", serviceSet(ns, "typed", true), ".spec.cluster: expected string"},
		{"a field the schema does not declare", func() *unstructured.Unstructured {
			o := serviceSet(ns, "undeclared", "c")
			_ = unstructured.SetNestedField(o.Object, "x", "spec", "notInTheSchema")
			return o
		}(), ".spec.notInTheSchema: field not declared in schema"},
		{"an invalid name", configMap(ns, "Not_A_Name", nil), "metadata.name: Invalid value"},
		{"a namespace that does not exist yet", serviceSet(ns+"-later", "ok", "c"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := tc.obj.DeepCopy()
			var err error
			reqs := requests.during(func() { err = v.Validate(context.Background(), tc.obj) })
			g.Expect(dryRuns(reqs)).To(HaveLen(1), "%v", reqs)
			g.Expect(tc.obj).To(Equal(before), "the object is not modified")
			if tc.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(check.IsRefused(err)).To(BeTrue(), "error: %v", err)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue())
			g.Expect(err).To(MatchError(ContainSubstring(tc.refused)))
		})
	}
	// Nothing was stored.
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("k0rdent.mirantis.com/v1beta1")
	list.SetKind("ServiceSetList")
	NewWithT(t).Expect(env.Client.List(context.Background(), list)).To(Succeed())
	for _, o := range list.Items {
		NewWithT(t).Expect(o.GetNamespace()).NotTo(Equal(ns))
	}
}
