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
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

const timeout = 60 * time.Second

// maxPeakRSS bounds the managers' peak resident set over the whole suite:
// about twice what they use (133 MiB on 2026-12-03), far below what one
// unbounded tenant input costs (a 7 KiB YAML alias bomb: 746 MiB).
const maxPeakRSS = 256 << 20

// annotationKubeconfig on a ClusterDeployment names the route of the
// world (running.Route) whose kubeconfig the stand-in writes as its <cd>-kubeconfig Secret, as a
// tenant owning the cluster could.
const annotationKubeconfig = world.KubeconfigAnnotation

// valuesServiceAccount is the ServiceAccount of each namespace that the
// manager reads valuesFrom objects as (--values-from-service-account).
const valuesServiceAccount = "apiary-values"

// annotationRegional on a ClusterDeployment makes the stand-in write a
// kubeconfig of the regional control plane.
const annotationRegional = world.RegionalAnnotation

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
	// running is the suite's world; its routes hold the tenant-written
	// kubeconfigs, by name (annotationKubeconfig).
	running *world.Running
	workDir string
)

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "hostile", Management: true, Flux: true, Child: true, Regional: true,
		TenantGateway: &testenv.TenantGateway{Domain: tenantDomain,
			Key: types.NamespacedName{Namespace: access.DefaultGatewayNamespace, Name: access.DefaultGatewayName}},
		Git:     &world.Git{Repos: []world.Repo{{Name: tenantRepo, Branch: "main"}}},
		StandIn: standin.InWorld(), Process: managerArgs}, setup)
}

// managerArgs are the flags every run of the manager gets after the
// world's defaults.
var managerArgs = []string{"--leader-elect=false",
	"--child-server-https-only", "--values-from-service-account=" + valuesServiceAccount,
	// The regional cluster of Test6 runs no waypoint.
	"--workspace-waypoint-enabled=false"}

// setup takes the world's manager process, which runs for the whole suite
// (a test may switch it for one with other flags), and at the end checks that no
// manager panicked, exited or grew past maxPeakRSS.
func setup(r *world.Running) error {
	running = r
	env, child, regional, regionalClient, gitServer, workDir = r.Management, r.Child, r.Regional, r.RegionalClient, r.Git, r.Dir
	manager, logNames = r.Process, []string{"manager.log"}
	r.AtEnd(func(code int) int {
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
	})
	return nil
}

// tenant makes a namespace with a ready ClusterDeployment c1 and the
// templates "tpl", "cred" and "tmpl".
func tenant(t *testing.T, prefix string) string {
	t.Helper()
	return builder.Tenant(t, env, prefix)
}

// class creates a WorkspaceClass of ns's template "tmpl".
func class(t *testing.T, ns string, mutate func(*workspacesv1.WorkspaceClass)) string {
	t.Helper()
	if mutate == nil {
		return builder.Class(t, env.Client, ns, "class")
	}
	return builder.Class(t, env.Client, ns, "class", mutate)
}

// workspace is a workspace of a class on a cluster of ns, not created yet.
func workspace(ns, name, cls, cluster string) *workspacesv1.WorkspaceDeployment {
	return builder.Workspace(ns, name, cls, cluster)
}

// create creates an object on the management cluster and deletes it when
// the test ends (a workspace: waits until it is gone).
func create(t *testing.T, obj client.Object) {
	t.Helper()
	builder.Create(t, env.Client, obj)
}

// get reads a workspace.
func get(g Gomega, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	return world.Get(g, env.Client, w)
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
