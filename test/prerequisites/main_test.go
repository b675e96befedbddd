// Package prerequisites_test proves the lifecycle of shared prerequisite
// installs end to end: a management control plane with the k0rdent
// stand-in, which installs every ServiceSet on one child control plane with
// Helm (and counts installs and upgrades per release), and an Apiary
// manager started by each test with its own --prerequisite-grace-period, so
// that tests can restart it. Each test has a namespace, a ClusterDeployment
// c1 in it, and installs its prerequisites into a child namespace of the
// same name, so releases of different tests never meet.
package prerequisites_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

const timeout = 60 * time.Second

var (
	env, child *testenv.Environment
	// sets is the stand-in's ServiceSet part, for install and upgrade counts.
	sets *standin.ServiceSets
)

func TestMain(m *testing.M) {
	stand := &standin.StandIn{}
	world.Main(m, world.World{Name: "prerequisites", Management: true, Child: true, StandIn: stand.InWorld()},
		func(r *world.Running) error {
			env, child, sets = r.Management, r.Child, stand.ServiceSets()
			return nil
		})
}

// apiary starts a manager with a prerequisite grace period for one test;
// its requests are counted per namespace (steady_test.go).
func apiary(t *testing.T, grace time.Duration) *managertest.Manager {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt} })
	return managertest.Start(t, manager.Options{
		RestConfig:              cfg,
		InventoryInterval:       time.Minute,
		NoCrossNamespaceRefs:    true,
		PrerequisiteGracePeriod: grace,
	})
}

// tenant creates a namespace with a ready ClusterDeployment c1, its
// template and credential, and the workspace ServiceTemplate "tmpl".
func tenant(t *testing.T, prefix string) string {
	t.Helper()
	return builder.Tenant(t, env, prefix)
}

// certManager creates a ServiceTemplate of the Helm chart cert-manager at a
// version, as k0rdent's catalog names them (cert-manager-1-16 and so on);
// the stand-in installs its prerequisite chart for it.
func certManager(t *testing.T, ns, name, version string) {
	t.Helper()
	st := standin.NewHelmServiceTemplate(ns, name, "cert-manager", version,
		map[string]string{standin.AnnotationChart: standin.ChartPrerequisite})
	if err := standin.CreateWithStatus(context.Background(), env.Client, st); err != nil {
		t.Fatalf("creating ServiceTemplate %s: %v", name, err)
	}
}

// class creates a WorkspaceClass of the namespace's template "tmpl" with
// one prerequisite, installed into the child namespace named like ns, and
// waits until it is valid.
func class(t *testing.T, ns, name, prereq, constraint string) string {
	t.Helper()
	return builder.Class(t, env.Client, ns, name, builder.Named(name), builder.WithPrerequisite(ns, prereq, constraint))
}

// workspace creates a workspace of a class on the namespace's cluster c1
// and removes it when the test ends (unless the test did).
func workspace(t *testing.T, ns, name, cls string) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	w := builder.Workspace(ns, name, cls, builder.Cluster)
	builder.Create(t, env.Client, w)
	return w
}

// deleteAndWait deletes a workspace, waits until it is gone and returns
// its deletion time (zero when it was gone already).
func deleteAndWait(t *testing.T, w *workspacesv1.WorkspaceDeployment) time.Time {
	t.Helper()
	return world.DeleteAndWait(t, env.Client, w)
}

func get(g Gomega, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	return world.Get(g, env.Client, w)
}

// eventuallyPhase waits for a phase and returns the workspace.
func eventuallyPhase(t *testing.T, w *workspacesv1.WorkspaceDeployment, phase workspacesv1.WorkspacePhase) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	return world.EventuallyPhase(t, env.Client, w, phase)
}

func running(t *testing.T, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	return eventuallyPhase(t, w, workspacesv1.PhaseRunning)
}

func metaCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// prerequisites lists the prerequisite ServiceSets of a namespace.
func prerequisites(g Gomega, ns string) []k0rdentv1beta1.ServiceSet {
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{"workspaces.exalsius.ai/role": "prerequisite"})).To(Succeed())
	return list.Items
}

// onePrerequisite waits until the namespace has exactly one prerequisite
// ServiceSet and returns it.
func onePrerequisite(t *testing.T, ns string) *k0rdentv1beta1.ServiceSet {
	t.Helper()
	var out *k0rdentv1beta1.ServiceSet
	NewWithT(t).Eventually(func(g Gomega) {
		list := prerequisites(g, ns)
		g.Expect(list).To(HaveLen(1))
		out = &list[0]
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return out
}

// counts are the stand-in's installs and upgrades of a release on c1.
func counts(ns, release string) (installs, upgrades int) {
	cluster := types.NamespacedName{Namespace: ns, Name: "c1"}
	return sets.Installs(cluster, ns, release), sets.Upgrades(cluster, ns, release)
}

// installedOnChild reports whether the prerequisite chart's release is on
// the child (its ConfigMap exists).
func installedOnChild(g Gomega, ns, release string) bool {
	err := child.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + standin.InstalledConfigMapSuffix},
		&corev1.ConfigMap{})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// requestsByNamespace counts the requests of the tests' managers to
// namespaced paths, watches left out.
var requestsByNamespace sync.Map

type countingTransport struct{ next http.RoundTripper }

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		if _, rest, ok := strings.Cut(req.URL.Path, "/namespaces/"); ok {
			ns, _, _ := strings.Cut(rest, "/")
			n, _ := requestsByNamespace.LoadOrStore(ns, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
	}
	return c.next.RoundTrip(req)
}

// requestsIn is how many requests the managers made to objects of a namespace.
func requestsIn(ns string) int64 {
	if n, ok := requestsByNamespace.Load(ns); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}
