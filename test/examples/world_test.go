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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// scenario is one run of the examples in a world of its own: control
// planes, stand-in, Git server, Flux and Apiary, all stopped by the test's
// cleanup.
type scenario struct {
	env, child *testenv.Environment
	git        *testenv.GitServer
	flux       *testenv.Flux
	// gitMode is true when Apiary delivers through Git.
	gitMode bool
	// checkoutDir is the manager's Git checkout in Git mode.
	checkoutDir string
}

// examplesDir is gitops-examples/ in the repository.
func examplesDir() string { return filepath.Join(testenv.RepoRoot(), "gitops-examples") }

// exampleFile reads a file of gitops-examples/.
func exampleFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir(), rel))
	if err != nil {
		t.Fatalf("reading gitops-examples/%s: %v", rel, err)
	}
	return data
}

// fleetFiles returns every file of gitops-examples/fleet as the repository
// holds it (path from the repository root to content).
func fleetFiles(t *testing.T) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(examplesDir(), "fleet"))
	if err != nil {
		t.Fatalf("listing gitops-examples/fleet: %v", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.IsDir() {
			files["fleet/"+e.Name()] = exampleFile(t, "fleet/"+e.Name())
		}
	}
	return files
}

// startWorld starts everything the examples need but Apiary (startApiary),
// stopped when the test ends; gitMode picks Apiary's delivery.
func startWorld(t *testing.T, gitMode bool) *scenario {
	t.Helper()
	g := NewWithT(t)
	r, err := world.Start(world.World{Name: "examples", Management: true, Child: true,
		// The stand-in provisions every ClusterDeployment onto the child.
		StandIn:         standin.InWorld(),
		Git:             &world.Git{Options: []testenv.GitServerOption{testenv.WithGitBasicAuth(gitUser, gitPassword)}},
		FluxControllers: &testenv.FluxOptions{Namespace: fluxNS}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("Flux logs:\n" + r.Flux.Logs(80))
		}
		r.Stop(0)
	})
	w := &scenario{env: r.Management, child: r.Child, git: r.Git, flux: r.Flux, gitMode: gitMode,
		checkoutDir: filepath.Join(r.Dir, "checkout")}
	w.addBusyGPUNode(t)
	w.platformFixtures(t)
	g.Expect(w.git.InitRepo(repoName, branch)).To(Succeed())
	_, err = w.git.Commit(repoName, branch, "fleet: from gitops-examples", fleetFiles(t))
	g.Expect(err).NotTo(HaveOccurred())
	w.installFlux(t)
	return w
}

// startApiary runs the manager in the world's mode until the test ends.
func (w *scenario) startApiary(t *testing.T) {
	t.Helper()
	// Both modes run a manager in this process.
	opts := manager.Options{RestConfig: w.env.Config}
	if w.gitMode {
		opts.Git = gitOptions(t, w.checkoutDir)
	}
	managertest.Start(t, opts)
}

// busyPod is the child's Pod that holds every GPU of the H100 node until
// the scenario frees them.
var busyPod = client.ObjectKey{Namespace: "other-team", Name: "busy"}

// addBusyGPUNode gives the child cluster a node with the H100 GPUs ada asks
// for, all taken by busyPod, so that ada waits for capacity.
func (w *scenario) addBusyGPUNode(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const node, gpus = "h100-0", 8
	if err := standin.AddGPUNode(ctx, w.child.Client, node,
		map[string]string{"exalsius.ai/gpu-model": "H100-80GB"}, "nvidia.com/gpu", gpus); err != nil {
		t.Fatalf("adding a GPU node: %v", err)
	}
	if err := w.child.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: busyPod.Namespace}}); err != nil {
		t.Fatalf("creating namespace %s: %v", busyPod.Namespace, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: busyPod.Namespace, Name: busyPod.Name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
	if err := w.child.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s: %v", busyPod, err)
	}
}

// freeGPUs deletes busyPod at once: no kubelet runs to confirm its end.
func (w *scenario) freeGPUs(t *testing.T) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: busyPod.Namespace, Name: busyPod.Name}}
	if err := w.child.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s: %v", busyPod, err)
	}
}

// platformFixtures creates what k0rdent and the platform team provide
// before the fleet is committed: the ClusterTemplate and Credential the
// Colony names, and the ServiceTemplate of the WorkspaceClass, both where
// the class names it (kcm-system) and in the team's namespace, where k0rdent
// resolves a ServiceSet's templates.
func (w *scenario) platformFixtures(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{k0rdentv1beta1.SystemNamespace, teamNS} {
		if err := w.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(teamNS, "aws-standalone-cp-1-0-12", true),
		standin.NewCredential(teamNS, "aws-research", true),
		standin.NewServiceTemplate(teamNS, "jupyter-notebook-0-3-0", true, nil),
		standin.NewServiceTemplate(k0rdentv1beta1.SystemNamespace, "jupyter-notebook-0-3-0", true, nil),
	} {
		if err := standin.CreateWithStatus(ctx, w.env.Client, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
}

// installFlux creates what the README's walkthrough creates by hand (the
// age key and Git credential Secrets) and applies the committed Flux
// objects, with only the GitRepository's URL replaced by the loopback one.
func (w *scenario) installFlux(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := w.env.Client
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}})).To(Succeed())
	key, err := os.ReadFile(filepath.Join("testdata", "example.agekey"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: ageSecret}, Data: map[string][]byte{"age.agekey": key}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: gitAuthSecret},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
	} {
		g.Expect(c.Create(ctx, s)).To(Succeed())
	}
	files := []string{"flux/gitrepository.yaml", "flux/fleet-kustomization.yaml"}
	if w.gitMode {
		files = append(files, "flux/apiary-kustomization.yaml")
	}
	for _, f := range files {
		objs, err := testenv.DecodeObjects(exampleFile(t, f))
		g.Expect(err).NotTo(HaveOccurred(), f)
		for _, o := range objs {
			if o.GetKind() == "GitRepository" {
				g.Expect(unstructured.SetNestedField(o.Object, w.git.RepoURL(repoName), "spec", "url")).To(Succeed())
			}
			g.Expect(c.Create(ctx, o)).To(Succeed(), "%s %s", f, o.GetName())
		}
	}
}

// gitValues is the part of gitops-examples/apiary/values-git.yaml the chart
// turns into the manager's Git flags.
type gitValues struct {
	Delivery struct {
		Mode string `json:"mode"`
		Git  struct {
			GitRepositoryRef string `json:"gitRepositoryRef"`
			KustomizationRef string `json:"kustomizationRef"`
			Path             string `json:"path"`
			Author           struct {
				Name  string `json:"name"`
				Email string `json:"email"`
			} `json:"author"`
			CommitWindow string `json:"commitWindow"`
			SOPS         struct {
				AgeRecipients []string `json:"ageRecipients"`
			} `json:"sops"`
		} `json:"git"`
	} `json:"delivery"`
}

// gitOptions reads the committed Helm values for Git mode into the
// manager's options, as the chart's flags would carry them; only the
// checkout folder is the test's.
func gitOptions(t *testing.T, checkoutDir string) *manager.GitOptions {
	t.Helper()
	g := NewWithT(t)
	var v gitValues
	g.Expect(yaml.UnmarshalStrict(exampleFile(t, "apiary/values-git.yaml"), &v)).To(Succeed())
	g.Expect(v.Delivery.Mode).To(Equal("git"))
	gv := v.Delivery.Git
	repoRef, err := manager.ParseObjectRef("--git-repository-ref", gv.GitRepositoryRef)
	g.Expect(err).NotTo(HaveOccurred())
	ksRef, err := manager.ParseObjectRef("--git-kustomization-ref", gv.KustomizationRef)
	g.Expect(err).NotTo(HaveOccurred())
	window, err := time.ParseDuration(gv.CommitWindow)
	g.Expect(err).NotTo(HaveOccurred())
	return &manager.GitOptions{
		Path:             strings.TrimSuffix(gv.Path, "/"),
		GitRepositoryRef: repoRef,
		KustomizationRef: ksRef,
		AuthorName:       gv.Author.Name,
		AuthorEmail:      gv.Author.Email,
		CommitWindow:     window,
		CheckoutDir:      checkoutDir,
		AgeRecipients:    gv.SOPS.AgeRecipients,
	}
}
