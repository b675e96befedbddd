package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// The committed fleet: a Colony of two clusters and one workspace on each,
// with a SOPS-encrypted password Secret each.
var (
	workspaces = map[string]string{"ada": "research-h100", "grace": "research-l40s"}
	secrets    = []string{"ada-notebook", "grace-notebook"}
)

func TestExamplesDirectMode(t *testing.T) { runExamples(t, false) }

func TestExamplesGitMode(t *testing.T) { runExamples(t, true) }

// runExamples commits the fleet and applies the Flux objects as the
// README's walkthrough does, then checks that fleet's health check holds
// before Apiary runs and while a workspace waits for GPUs, fails at once on
// a Failed workspace, that every Kustomization becomes Ready
// once it has them (no deadlock), the Colony Ready, the workspaces Running with the
// passwords Flux decrypted, and that removing a workspace from Git removes
// it and its ServiceSet.
func runExamples(t *testing.T, gitMode bool) {
	g := NewWithT(t)
	ctx := context.Background()
	w := startWorld(t, gitMode)
	c := w.env.Client

	// Before Apiary writes any status, the health check must not pass:
	// kustomize-controller applies the class first and waits for it, and a
	// class without status reads InProgress (observedGeneration -1), as
	// the committed healthCheckExprs read a Colony or workspace without a
	// phase.
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Name: "jupyter-notebook-0-3-0"}, &workspacesv1.WorkspaceClass{})
	}).WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(Succeed(), "Flux applied the fleet's class")
	w.consistentlyNotReady(t, "fleet", "before Apiary runs")
	w.startApiary(t)

	// ada waits for the H100s another team's pod holds: fleet's health
	// check must not pass while a workspace is Waiting.
	ada := &workspacesv1.WorkspaceDeployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "ada"}, ada)).To(Succeed())
		g.Expect(ada.Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	w.consistentlyNotReady(t, "fleet", "while ada waits")
	w.freeGPUs(t)

	kustomizations := []string{"fleet"}
	if gitMode {
		kustomizations = append(kustomizations, "apiary-rendered")
	}
	for _, name := range kustomizations {
		w.eventuallyFluxReady(t, "Kustomization", name)
	}
	colony := &infrav1.Colony{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "research"}, colony)).To(Succeed())
	g.Expect(colony.Status.Phase).To(Equal(infrav1.ColonyPhaseReady))
	if gitMode {
		g.Expect(apimeta.IsStatusConditionTrue(colony.Status.Conditions, commonv1.SyncedCondition)).To(BeTrue(),
			"the Colony's ClusterDeployments came through apiary-rendered")
	}
	for name := range workspaces {
		ws := &workspacesv1.WorkspaceDeployment{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: name}, ws)).To(Succeed())
		g.Expect(ws.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "workspace %s", name)
	}

	// kustomize-controller decrypted the committed Secrets with the key.
	key, err := os.ReadFile(filepath.Join("testdata", "example.agekey"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range secrets {
		want := committedPassword(t, name, string(key))
		got := &corev1.Secret{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: name}, got)).To(Succeed())
		g.Expect(string(got.Data["password"])).To(Equal(want), "Secret %s", name)
	}

	// A workspace that fails (its class does not exist) fails fleet's
	// health check at once (the committed failed expression; kstatus's
	// Stalled says the same), not after the 5m timeout.
	doomed := append(exampleFile(t, "fleet/workspaces.yaml"), []byte(doomedWorkspace)...)
	_, err = w.git.Commit(repoName, branch, "fleet: add doomed", map[string][]byte{"fleet/workspaces.yaml": doomed})
	g.Expect(err).NotTo(HaveOccurred())
	w.requestFetch(t)
	g.Eventually(func(g Gomega) {
		ready := fluxCondition(w.fluxObject(g, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "fleet"), "Ready")
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal("HealthCheckFailed"), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.Message).To(ContainSubstring("WorkspaceDeployment/" + teamNS + "/doomed"))
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())

	// Removing grace (and doomed) from Git removes the workspaces and
	// grace's ServiceSet.
	set := &k0rdentv1beta1.ServiceSet{}
	setKey := client.ObjectKey{Namespace: teamNS, Name: plan.ServiceSetName(workspaces["grace"], "grace")}
	g.Expect(c.Get(ctx, setKey, set)).To(Succeed())
	_, err = w.git.Commit(repoName, branch, "fleet: remove grace",
		map[string][]byte{"fleet/workspaces.yaml": withoutDocument(t, exampleFile(t, "fleet/workspaces.yaml"), "grace")})
	g.Expect(err).NotTo(HaveOccurred())
	w.requestFetch(t)
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "grace"}, &workspacesv1.WorkspaceDeployment{})
	}).WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(MatchError(ContainSubstring("not found")), "grace pruned")
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "doomed"}, &workspacesv1.WorkspaceDeployment{})
	}).WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(MatchError(ContainSubstring("not found")), "doomed pruned")
	g.Eventually(func() error { return c.Get(ctx, setKey, &k0rdentv1beta1.ServiceSet{}) }).
		WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(MatchError(ContainSubstring("not found")), "grace's ServiceSet removed")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: teamNS, Name: "ada"}, ada)).To(Succeed())
	g.Expect(ada.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	w.eventuallyFluxReady(t, "Kustomization", "fleet")
}

// doomedWorkspace is a workspace the test adds to the fleet: it names a
// class that does not exist, so Apiary fails it.
const doomedWorkspace = `---
apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata:
  name: doomed
  namespace: ` + teamNS + `
spec:
  workspaceClassRef: no-such-class
  clusterDeploymentRef:
    name: research-h100
`

// committedPassword decrypts a committed Secret of the fleet with the
// examples' key and returns its password; the file itself must not hold it.
func committedPassword(t *testing.T, name, key string) string {
	t.Helper()
	g := NewWithT(t)
	sealed := exampleFile(t, "fleet/"+name+".sops.yaml")
	plain, err := sopsenc.Decrypt(sealed, key)
	g.Expect(err).NotTo(HaveOccurred(), name)
	var s corev1.Secret
	g.Expect(yaml.Unmarshal(plain, &s)).To(Succeed())
	password := s.StringData["password"]
	if password == "" {
		password = string(s.Data["password"])
	}
	g.Expect(password).NotTo(BeEmpty(), "%s has a password", name)
	g.Expect(string(sealed)).NotTo(ContainSubstring(password), "%s is committed encrypted", name)
	return password
}

// withoutDocument drops the YAML document of the object named name.
func withoutDocument(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	var kept []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if !strings.Contains(doc, "\n  name: "+name+"\n") {
			kept = append(kept, doc)
		}
	}
	if len(kept) == len(strings.Split(string(data), "\n---\n")) {
		t.Fatalf("no document names %s", name)
	}
	return []byte(strings.Join(kept, "\n---\n"))
}

// requestFetch asks source-controller to fetch the repository now, as
// `flux reconcile source git fleet` does.
func (w *scenario) requestFetch(t *testing.T) {
	t.Helper()
	repo := &unstructured.Unstructured{}
	repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	repo.SetKind("GitRepository")
	repo.SetNamespace(fluxNS)
	repo.SetName("fleet")
	NewWithT(t).Expect(w.flux.RequestReconcile(context.Background(), w.env.Client, repo)).To(Succeed())
}

// consistentlyNotReady checks for 3 s that a Kustomization is not Ready.
func (w *scenario) consistentlyNotReady(t *testing.T, name, when string) {
	t.Helper()
	NewWithT(t).Consistently(func(g Gomega) {
		ready := fluxCondition(w.fluxObject(g, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name), "Ready")
		g.Expect(ready == nil || ready.Status != metav1.ConditionTrue).To(BeTrue(), "%s is Ready %s", name, when)
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// eventuallyFluxReady waits until a Flux object in flux-system is Ready at
// the source's newest revision.
func (w *scenario) eventuallyFluxReady(t *testing.T, kind, name string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		repo := w.fluxObject(g, "source.toolkit.fluxcd.io/v1", "GitRepository", "fleet")
		revision, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "revision")
		obj := w.fluxObject(g, "kustomize.toolkit.fluxcd.io/v1", kind, name)
		ready := fluxCondition(obj, "Ready")
		g.Expect(ready).NotTo(BeNil(), "%s %s has no Ready condition", kind, name)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s %s: %s: %s", kind, name, ready.Reason, ready.Message)
		applied, _, _ := unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
		g.Expect(applied).To(Equal(revision), "%s %s applied the newest revision", kind, name)
	}).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
}

func (w *scenario) fluxObject(g Gomega, apiVersion, kind, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	g.Expect(w.env.Client.Get(context.Background(), client.ObjectKey{Namespace: fluxNS, Name: name}, obj)).To(Succeed())
	return obj
}

// fluxCondition returns a condition of a Flux object, nil when absent.
func fluxCondition(obj *unstructured.Unstructured, condType string) *metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok || m["type"] != condType {
			continue
		}
		c := &metav1.Condition{Type: condType}
		if s, ok := m["status"].(string); ok {
			c.Status = metav1.ConditionStatus(s)
		}
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		return c
	}
	return nil
}
