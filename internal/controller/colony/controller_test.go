package colony_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// quickstartColony reads the exalsius quick start Colony shipped in examples/.
func quickstartColony(t *testing.T, ns string) *infrav1.Colony {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", "quickstart", "colony.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &infrav1.Colony{}
	if err := yaml.Unmarshal(data, c); err != nil {
		t.Fatal(err)
	}
	c.Namespace = ns
	return c
}

func getColony(g Gomega, key client.ObjectKey) *infrav1.Colony {
	c := &infrav1.Colony{}
	g.Expect(controllertest.Env.Client.Get(context.Background(), key, c)).To(Succeed())
	return c
}

// createColony creates a Colony of entries in ns.
func createColony(t *testing.T, ns, name string, entries ...infrav1.ColonyCluster) *infrav1.Colony {
	t.Helper()
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: infrav1.ColonySpec{ColonyClusters: entries}}
	NewWithT(t).Expect(controllertest.Env.Client.Create(context.Background(), colony)).To(Succeed())
	return colony
}

// eventuallyReady waits for the Colony to be Ready for its current
// generation, and checks that the counts agree: status is written at once.
func eventuallyReady(t *testing.T, key client.ObjectKey) *infrav1.Colony {
	t.Helper()
	var c *infrav1.Colony
	NewWithT(t).Eventually(func(g Gomega) {
		c = getColony(g, key)
		ready := controllertest.Condition(c, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	NewWithT(t).Expect(c.Status.ReadyClusters).To(Equal(c.Status.TotalClusters), "Ready=True comes with its counts")
	return c
}

func TestColonyFromExalsiusManifest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "colony")
	controllertest.K0rdentFixtures(t, ns)
	model := "H100-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-h100-a", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-h100-b", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 4)).To(Succeed())
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-mi300", map[string]string{"amd.com/gpu.product-name": "MI300X-" + ns}, "amd.com/gpu", 8)).To(Succeed())
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-unlabelled", map[string]string{"exalsius.ai/gpu-vendor": "NVIDIA-" + ns}, "nvidia.com/gpu", 2)).To(Succeed())

	colony := quickstartColony(t, ns)
	g.Expect(controllertest.Env.Client.Create(ctx, colony)).To(Succeed())
	key := client.ObjectKeyFromObject(colony)
	c := eventuallyReady(t, key)

	g.Expect(c.Status.Phase).To(Equal(infrav1.ColonyPhaseReady))
	g.Expect(c.Status.TotalClusters).To(BeEquivalentTo(1))
	g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(1))
	g.Expect(c.Finalizers).To(ContainElement(infrav1.ColonyFinalizer))
	g.Expect(c.Status.ClusterDeploymentRefs).To(HaveLen(1))
	g.Expect(c.Status.ClusterDeploymentRefs[0].Name).To(Equal("quickstart-child-1"))
	g.Expect(controllertest.Condition(c, infrav1.ClustersReadyCondition).Reason).To(Equal(infrav1.AllClustersReadyReason))

	// The ClusterDeployment carries the entry's spec verbatim.
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quickstart-child-1"}, cd)).To(Succeed())
	g.Expect(cd.Spec.Template).To(Equal("exalsius-remote-cluster-0-1-5"))
	g.Expect(cd.Spec.Credential).To(Equal("remote-cred"))
	var want map[string]any
	g.Expect(json.Unmarshal(colony.Spec.ColonyClusters[0].ClusterDeploymentSpec.Raw, &want)).To(Succeed())
	g.Expect(cd.Spec.Config.Raw).To(MatchJSON(mustJSON(want["config"])))
	g.Expect(metav1.IsControlledBy(cd, c)).To(BeTrue())
	g.Expect(cd.Labels).To(HaveKeyWithValue(infrav1.ColonyLabel, "quickstart"))

	// The aggregated Secret references the cluster's kubeconfig Secret.
	secret := &corev1.Secret{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quickstart-kubeconfigs"}, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKey("quickstart-child-1"))
	g.Expect(secret.Data["quickstart-child-1"]).To(MatchJSON(
		`{"apiVersion":"v1","kind":"Secret","namespace":"` + ns + `","name":"quickstart-child-1-kubeconfig"}`))
	g.Expect(c.Status.KubeconfigSecretName).To(Equal("quickstart-kubeconfigs"))

	// The GPU inventory matches the child's nodes.
	g.Eventually(func(g Gomega) {
		inv := getColony(g, key).Status.GPUInventory["quickstart-child-1"]
		g.Expect(inv.LastUpdated).NotTo(BeNil())
		g.Expect(inv.Offerings).To(ContainElements(
			SatisfyAll(
				HaveField("Model", model), HaveField("Vendor", "NVIDIA"), HaveField("ResourceName", "nvidia.com/gpu"),
				HaveField("Total", BeEquivalentTo(12)), HaveField("Nodes", BeEquivalentTo(2)),
				HaveField("Selector", Equal(map[string]string{"exalsius.ai/gpu-model": model}))),
			SatisfyAll(
				HaveField("Model", "MI300X-"+ns), HaveField("Vendor", "AMD"), HaveField("ResourceName", "amd.com/gpu"),
				HaveField("Total", BeEquivalentTo(8)), HaveField("Nodes", BeEquivalentTo(1)),
				HaveField("Selector", Equal(map[string]string{"amd.com/gpu.product-name": "MI300X-" + ns}))),
			SatisfyAll(
				HaveField("Model", ""), HaveField("Vendor", "NVIDIA-"+ns), HaveField("Total", BeEquivalentTo(2))),
		))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

func TestColonyEntriesAddedChangedRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "entries")
	controllertest.K0rdentFixtures(t, ns)
	colony := createColony(t, ns, "fleet", controllertest.ColonyEntry("a"))
	key := client.ObjectKeyFromObject(colony)
	eventuallyReady(t, key)

	// Added.
	c := getColony(g, key)
	controllertest.UpdateSpec(g, c, func(c *infrav1.Colony) {
		c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, controllertest.ColonyEntry("b"))
	})
	c = eventuallyReady(t, key)
	g.Expect(c.Status.TotalClusters).To(BeEquivalentTo(2))
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-b"}, &k0rdentv1beta1.ClusterDeployment{})).To(Succeed())

	// Changed: the new config reaches the ClusterDeployment.
	controllertest.UpdateSpec(g, c, func(c *infrav1.Colony) {
		c.Spec.ColonyClusters[0].ClusterDeploymentSpec.Raw = []byte(
			`{"template":"exalsius-remote-cluster-0-1-5","credential":"remote-cred","config":{"controlPlaneNumber":3}}`)
		c.Spec.ColonyClusters[0].ClusterLabels = map[string]string{"tier": "gold"}
	})
	g.Eventually(func(g Gomega) {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-a"}, cd)).To(Succeed())
		g.Expect(cd.Spec.Config.Raw).To(MatchJSON(`{"controlPlaneNumber":3}`))
		g.Expect(cd.Labels).To(HaveKeyWithValue("tier", "gold"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Removed: the ClusterDeployment is pruned and the Secret forgets it.
	controllertest.UpdateSpec(g, c, func(c *infrav1.Colony) { c.Spec.ColonyClusters = c.Spec.ColonyClusters[1:] })
	g.Eventually(func() bool {
		err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-a"}, &k0rdentv1beta1.ClusterDeployment{})
		return apierrors.IsNotFound(err)
	}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue())
	c = eventuallyReady(t, key)
	g.Expect(c.Status.TotalClusters).To(BeEquivalentTo(1))
	g.Eventually(func(g Gomega) {
		secret := &corev1.Secret{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-kubeconfigs"}, secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveKey("fleet-b"))
		g.Expect(secret.Data).NotTo(HaveKey("fleet-a"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

func TestColonyOneClusterFailingDoesNotBlockOthers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "failing")
	controllertest.K0rdentFixtures(t, ns)
	bad := controllertest.ColonyEntry("bad")
	bad.ClusterAnnotations = map[string]string{standin.AnnotationFail: "quota exceeded in region"}
	missing := controllertest.ColonyEntry("orphan")
	missing.ClusterDeploymentSpec.Raw = []byte(`{"template":"no-such-template","credential":"remote-cred"}`)
	colony := createColony(t, ns, "mixed", controllertest.ColonyEntry("good"), bad, missing)

	g.Eventually(func(g Gomega) {
		c := getColony(g, client.ObjectKeyFromObject(colony))
		g.Expect(c.Status.Phase).To(Equal(infrav1.ColonyPhaseDegraded))
		g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(1))
		g.Expect(c.Status.TotalClusters).To(BeEquivalentTo(3))
		ready := controllertest.Condition(c, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("quota exceeded in region"))
		g.Expect(ready.Message).To(ContainSubstring("no-such-template"))
		g.Expect(controllertest.Condition(c, commonv1.StalledCondition)).NotTo(BeNil())
		g.Expect(c.Status.Clusters).To(ContainElement(SatisfyAll(
			HaveField("ClusterName", "good"), HaveField("Ready", true))))
		g.Expect(c.Status.Clusters).To(ContainElement(SatisfyAll(
			HaveField("ClusterName", "orphan"), HaveField("Reason", infrav1.ClusterFailedReason),
			HaveField("Message", ContainSubstring("TemplateReady")))))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Fixing the template heals the cluster without touching the Colony.
	g.Expect(standin.CreateWithStatus(ctx, controllertest.Env.Client, standin.NewClusterTemplate(ns, "no-such-template", true))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getColony(g, client.ObjectKeyFromObject(colony))
		g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(2))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

func TestColonyBadBundleStallsAndNamesFileAndLine(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "bundle")
	controllertest.K0rdentFixtures(t, ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken-bundle", Namespace: ns}, Data: map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"templates__cd.yaml": "apiVersion: k0rdent.mirantis.com/v1beta1\nkind: ClusterDeployment\nmetadata:\n" +
			"  name: {{ .Input.clusterDeploymentName }}\n  namespace: {{ .Input.colony.namespace }}\n" +
			"spec:\n  template: {{ .Input.cluster.clusterDeploymentSpec.template | nosuchfunction }}\n",
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, cm)).To(Succeed())
	broken := controllertest.ColonyEntry("broken")
	broken.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: "broken-bundle"}}
	colony := createColony(t, ns, "bundles", controllertest.ColonyEntry("fine"), broken)

	g.Eventually(func(g Gomega) {
		c := getColony(g, client.ObjectKeyFromObject(colony))
		stalled := controllertest.Condition(c, commonv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		rendered := controllertest.Condition(c, commonv1.RenderedCondition)
		g.Expect(rendered).NotTo(BeNil())
		g.Expect(rendered.Reason).To(Equal(commonv1.RenderFailedReason))
		g.Expect(rendered.Message).To(ContainSubstring("broken-bundle"))
		g.Expect(rendered.Message).To(ContainSubstring("templates/cd.yaml"))
		g.Expect(rendered.Message).To(MatchRegexp(`cd.yaml:7`))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func() error {
		return controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bundles-fine"}, &k0rdentv1beta1.ClusterDeployment{})
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed(), "a bad bundle in one entry does not block the others")

	// Fixing the bundle heals the Colony.
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	cm.Data["templates__cd.yaml"] = strings.Replace(cm.Data["templates__cd.yaml"], " | nosuchfunction", "", 1) +
		"  credential: remote-cred\n  config: {}\n"
	g.Expect(controllertest.Env.Client.Update(ctx, cm)).To(Succeed())
	c := eventuallyReady(t, client.ObjectKeyFromObject(colony))
	g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(2))
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// TestColonyStatusWithNoReadyClusterIsWritten keeps a Colony's only cluster
// provisioning: its first status, whose readyClusters is still zero, is
// written (and shows 0/1) rather than refused by the API server for a
// missing required field.
func TestColonyStatusWithNoReadyClusterIsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "colony-slow")
	controllertest.K0rdentFixtures(t, ns)
	slow := controllertest.ColonyEntry("slow")
	slow.ClusterAnnotations = map[string]string{standin.AnnotationDelay: "10m"}
	colony := createColony(t, ns, "slow", slow)
	g.Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(infrav1.GroupVersion.WithKind("Colony"))
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(colony), u)).To(Succeed())
		ready, found, _ := unstructured.NestedInt64(u.Object, "status", "readyClusters")
		g.Expect(found).To(BeTrue(), "status.readyClusters is written")
		g.Expect(ready).To(BeZero())
		total, _, _ := unstructured.NestedInt64(u.Object, "status", "totalClusters")
		g.Expect(total).To(BeEquivalentTo(1))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}
