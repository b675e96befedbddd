// Package hostile_test plays a hostile tenant against the real manager: a
// process of its own built from this repository, run against a management
// control plane with the k0rdent stand-in and Flux's CRDs, a child control
// plane, a regional control plane with a tenant Gateway, and a Git server
// (a test may run the manager in Git mode for a while). A tenant may write
// WorkspaceDeployments, Secrets and ConfigMaps in its namespaces and the
// kubeconfig Secret of a cluster it owns; each test is one thing such a
// tenant tried (the numbered items of docs/security.md) and what it must
// not reach; TestTenantRolesAllowAndRefuse shows what the chart's tenant
// roles let it write at all. The managers must never have panicked or
// exited, and their peak resident memory is printed.
package hostile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
)

const timeout = 60 * time.Second

// maxPeakRSS bounds the managers' peak resident set over the whole suite:
// about twice what they use (133 MiB on 2026-12-03), far below what one
// unbounded tenant input costs (a 7 KiB YAML alias bomb: 746 MiB).
const maxPeakRSS = 256 << 20

// annotationKubeconfig on a ClusterDeployment names the entry of
// kubeconfigs that the stand-in writes as its <cd>-kubeconfig Secret, as a
// tenant owning the cluster could.
const annotationKubeconfig = "test.apiary.dev/tenant-kubeconfig"

// valuesServiceAccount is the ServiceAccount of each namespace that the
// manager reads valuesFrom objects as (--values-from-service-account).
const valuesServiceAccount = "apiary-values"

// annotationRegional on a ClusterDeployment makes the stand-in write a
// kubeconfig of the regional control plane.
const annotationRegional = "test.apiary.dev/regional"

// tenantDomain is the domain of the regional cluster's tenant Gateway.
const tenantDomain = "tenant.example.com"

// tenantRepo is the repository of gitServer that tenants share.
const tenantRepo = "tenants.git"

var (
	env, child *testenv.Environment
	// regional is a regional cluster: the Gateway API's CRDs and the tenant
	// Gateway of tenantDomain; regionalClient knows the Gateway API's types.
	regional       *testenv.Environment
	regionalClient client.Client
	// gitServer serves the repository tenants deliver to with --tenant-git.
	gitServer *testenv.GitServer
	// kubeconfigs are the tenant-written kubeconfigs, by name.
	kubeconfigs sync.Map
	workDir     string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	var err error
	if workDir, err = os.MkdirTemp("", "apiary-hostile-"); err != nil {
		return fail("creating a folder", err)
	}
	defer func() { _ = os.RemoveAll(workDir) }()
	binary, err = managertest.BuildManager(workDir)
	if err != nil {
		return fail("building", err)
	}
	fluxCRDs, err := testenv.FluxCRDDirs()
	if err != nil {
		return fail("finding Flux's CRDs", err)
	}
	if regional, regionalClient, err = testenv.StartGatewayPlane(); err != nil {
		return fail("starting the regional control plane", err)
	}
	defer func() { _ = regional.Stop() }()
	regionalKubeconfig, err := regional.Kubeconfig()
	if err != nil {
		return fail("regional kubeconfig", err)
	}
	gw := types.NamespacedName{Namespace: access.DefaultGatewayNamespace, Name: access.DefaultGatewayName}
	if err := (testenv.TenantGateway{Key: gw, Domain: tenantDomain}).Create(context.Background(), regionalClient); err != nil {
		return fail("creating the tenant Gateway", err)
	}
	clusters, err := managertest.StartClustersWith([]testenv.Option{testenv.WithCRDDirs(fluxCRDs...)}, func(si *standin.StandIn) {
		normal := si.KubeconfigFor
		si.KubeconfigFor = func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
			if cd.Annotations[annotationRegional] == "true" {
				return regionalKubeconfig
			}
			if name := cd.Annotations[annotationKubeconfig]; name != "" {
				if v, ok := kubeconfigs.Load(name); ok {
					return v.([]byte)
				}
			}
			return normal(cd)
		}
	})
	if err != nil {
		return fail("starting the clusters", err)
	}
	defer clusters.Stop()
	env, child = clusters.Management, clusters.Child
	if gitServer, err = testenv.StartGitServer(filepath.Join(workDir, "git")); err != nil {
		return fail("starting the Git server", err)
	}
	defer func() { _ = gitServer.Stop() }()
	if err := gitServer.InitRepo(tenantRepo, "main"); err != nil {
		return fail("creating the tenants' repository", err)
	}
	if _, err := gitServer.Commit(tenantRepo, "main", "start", map[string][]byte{"README.md": []byte("tenants\n")}); err != nil {
		return fail("first commit", err)
	}
	admin, err := env.Kubeconfig()
	if err != nil {
		return fail("management kubeconfig", err)
	}
	kubeconfig := filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, admin, 0o600); err != nil {
		return fail("writing the kubeconfig", err)
	}
	managerArgs = []string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--crd-check-interval=1s", "--gpu-inventory-interval=1m", "--leader-elect=false",
		"--child-server-https-only", "--values-from-service-account=" + valuesServiceAccount,
		// The regional cluster of Test6 runs no waypoint.
		"--workspace-waypoint-enabled=false"}
	if err := startManager("direct"); err != nil {
		return fail("starting the manager", err)
	}
	code := m.Run()
	if problems := stopManager(); problems != "" {
		fmt.Fprint(os.Stderr, problems)
		code = 1
	}
	fmt.Printf("hostile: the manager's peak resident set over the suite: %.1f MiB (bound %d MiB)\n", float64(peakRSS)/(1<<20), maxPeakRSS>>20)
	if peakRSS > maxPeakRSS {
		fmt.Fprintf(os.Stderr, "hostile: the manager's peak resident set %.1f MiB is over the bound of %d MiB: "+
			"a tenant's input made it allocate what no bound stopped\n", float64(peakRSS)/(1<<20), maxPeakRSS>>20)
		code = 1
	}
	if code != 0 {
		for _, name := range logNames {
			data, _ := os.ReadFile(filepath.Join(workDir, name))
			kept := filepath.Join(os.TempDir(), "apiary-hostile-"+name)
			_ = os.WriteFile(kept, data, 0o644)
			fmt.Fprintf(os.Stderr, "a manager's log: %s\n", kept)
		}
	}
	return code
}

// tenant makes a namespace with a ready ClusterDeployment c1 and the
// templates "tpl", "cred" and "tmpl".
func tenant(t *testing.T, prefix string) string {
	t.Helper()
	ns := env.NewNamespace(t, prefix)
	managertest.ReadyCluster(t, env.Client, ns, "c1")
	return ns
}

// class creates a WorkspaceClass of ns's template "tmpl".
func class(t *testing.T, ns string, mutate func(*workspacesv1.WorkspaceClass)) string {
	t.Helper()
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-" + ns}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "class", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: ns}}}
	if mutate != nil {
		mutate(c)
	}
	create(t, c)
	return c.Name
}

// workspace is a workspace of a class on a cluster of ns, not created yet.
func workspace(ns, name, cls, cluster string) *workspacesv1.WorkspaceDeployment {
	return &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: cls,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: cluster, Namespace: ns}},
	}
}

// create creates an object on the management cluster and deletes it when
// the test ends (a workspace: waits until it is gone).
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if w, ok := obj.(*workspacesv1.WorkspaceDeployment); ok {
			managertest.DeleteAndWait(t, env.Client, w)
			return
		}
		_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), obj))
	})
}

// get reads a workspace.
func get(g Gomega, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	out := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), out)).To(Succeed())
	return out
}

// condition returns a condition of a workspace, nil when absent.
func condition(w *workspacesv1.WorkspaceDeployment, t string) *metav1.Condition {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == t {
			return &w.Status.Conditions[i]
		}
	}
	return nil
}
