// Package wakeups_test proves that every wait of a workspace ends: a
// management control plane with the k0rdent stand-in, one child control
// plane holding GPU nodes, and an Apiary manager per test. Several
// workspaces sharing classes, a prerequisite and clusters are created at
// once; the things they wait for (the shared prerequisite, their
// ServiceSets, their clusters, classes, values, quota room, GPU capacity)
// settle either at once, before the workspace's own status write reaches
// the manager's cache, or slowly. Every workspace must reach the phase the
// test expects well before any safety-net resync would bring it there.
package wakeups_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// settle bounds how long a workspace may take to reach the phase a test
// expects. It is well below the safety-net resyncs of waiting workspaces
// (a minute), so a workspace that gets there was woken by an event.
const settle = 40 * time.Second

var env, child *testenv.Environment

// TestMain starts the clusters. The stand-in leaves the services out of the
// ClusterDeployments' status, whose change would wake every workspace of a
// cluster: the workspaces must be woken by the events of what they wait
// for alone.
func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "wakeups", Management: true, Child: true,
		StandIn: standin.InWorld(func(si *standin.StandIn) { si.ServicesUnreported = true })},
		func(r *world.Running) error {
			env, child = r.Management, r.Child
			return nil
		})
}

// apiary starts a manager for one test. With a statusLag, every write of a
// workspace's status is held that long before it is sent: the objects the
// workspace waits for settle before the manager's cache holds the phase it
// decided, which is the window of a lost wake-up.
func apiary(t *testing.T, statusLag time.Duration) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	if statusLag > 0 {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return laggingStatus{next: rt, lag: statusLag} })
	}
	managertest.Start(t, manager.Options{
		RestConfig:           cfg,
		InventoryInterval:    time.Minute,
		NoCrossNamespaceRefs: true,
	})
}

// laggingStatus holds the writes of workspaces' status subresource.
type laggingStatus struct {
	next http.RoundTripper
	lag  time.Duration
}

func (l laggingStatus) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/workspacedeployments/") &&
		strings.HasSuffix(req.URL.Path, "/status") {
		select {
		case <-time.After(l.lag):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return l.next.RoundTrip(req)
}

// templates creates the workspace template "fast" and the prerequisite
// template "prereq" in ns; annotations are the stand-in's knobs of both.
func templates(t *testing.T, ns string, annotations map[string]string) {
	t.Helper()
	prereq := map[string]string{standin.AnnotationChart: standin.ChartPrerequisite}
	for k, v := range annotations {
		prereq[k] = v
	}
	for _, st := range []client.Object{
		standin.NewServiceTemplate(ns, "fast", true, annotations),
		standin.NewHelmServiceTemplate(ns, "prereq", "prereq", "1.0.0", prereq),
	} {
		if err := standin.CreateWithStatus(context.Background(), env.Client, st); err != nil {
			t.Fatalf("creating ServiceTemplate %s: %v", st.GetName(), err)
		}
	}
}

// class creates a WorkspaceClass of ns's template "fast" with the shared
// prerequisite "prereq" (installed into the child namespace named like
// ns) and, with gpus > 0, that many GPUs per replica by default (a class
// names no GPU model: see onModel).
func class(t *testing.T, ns, name string, gpus int32) string {
	t.Helper()
	return builder.Class(t, env.Client, ns, name, builder.Named(name), builder.OfTemplate("fast"),
		builder.WithPrerequisite(ns, "prereq", ""), func(c *workspacesv1.WorkspaceClass) {
			if gpus > 0 {
				c.Spec.DefaultResources.PerReplica = &workspacesv1.PerReplicaResources{
					GPUCount: ptr.To(gpus), CPU: ptr.To(resource.MustParse("1")),
				}
			}
		})
}

// newWorkspace is a workspace of a class on a cluster of ns, not created yet.
func newWorkspace(ns, name, cls, cluster string) *workspacesv1.WorkspaceDeployment {
	return builder.Workspace(ns, name, cls, cluster)
}

// onModel asks for the GPUs of a model, as a workspace chooses them.
func onModel(w *workspacesv1.WorkspaceDeployment, model string) *workspacesv1.WorkspaceDeployment {
	w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUType: ptr.To(model)}}
	return w
}

// createAll creates workspaces one right after the other, removed when the
// test ends (before its manager stops).
func createAll(t *testing.T, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	for _, w := range ws {
		if err := env.Client.Create(context.Background(), w); err != nil {
			t.Fatalf("creating workspace %s: %v", w.Name, err)
		}
	}
	t.Cleanup(func() {
		for _, w := range ws {
			_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), w))
		}
		for _, w := range ws {
			world.DeleteAndWait(t, env.Client, w)
		}
	})
}

// gpuNode adds a GPU node of a model to the child, removed when the test ends.
func gpuNode(t *testing.T, name, model string, count int64) {
	t.Helper()
	ctx := context.Background()
	if err := standin.AddGPUNode(ctx, child.Client, name, map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", count); err != nil {
		t.Fatalf("adding node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = child.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
}

// gpuQuota limits the GPUs of the namespaces labelled tenant=ns.
func gpuQuota(t *testing.T, ns string, gpus int64) {
	t.Helper()
	ctx := context.Background()
	obj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	obj.Labels = map[string]string{"tenant": ns}
	if err := env.Client.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard: quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{
			{Name: "all", ResourceName: "nvidia.com/gpu", Count: gpus},
		}},
	}}
	if err := env.Client.Create(ctx, q); err != nil {
		t.Fatalf("creating TenantQuota: %v", err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), q)) })
}

// phases reads the phase of each workspace, with its message.
func phases(g Gomega, ws []*workspacesv1.WorkspaceDeployment) map[string]string {
	out := map[string]string{}
	for _, w := range ws {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
		out[w.Name] = fmt.Sprintf("%s (%s)", got.Status.Phase, got.Status.Message)
	}
	return out
}

// expectPhases waits, at most settle, until each workspace has the phase
// want gives it, and says which did not.
func expectPhases(t *testing.T, ws []*workspacesv1.WorkspaceDeployment, want func(*workspacesv1.WorkspaceDeployment) workspacesv1.WorkspacePhase) {
	t.Helper()
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		got := phases(g, ws)
		var wrong []string
		for _, w := range ws {
			if p := want(w); !strings.HasPrefix(got[w.Name], string(p)+" ") {
				wrong = append(wrong, fmt.Sprintf("%s wants %s, is %s", w.Name, p, got[w.Name]))
			}
		}
		g.Expect(wrong).To(BeEmpty())
	}, settle, 200*time.Millisecond).Should(Succeed())
	t.Logf("%d workspaces settled in %s", len(ws), time.Since(start).Round(10*time.Millisecond))
}

func all(p workspacesv1.WorkspacePhase) func(*workspacesv1.WorkspaceDeployment) workspacesv1.WorkspacePhase {
	return func(*workspacesv1.WorkspaceDeployment) workspacesv1.WorkspacePhase { return p }
}

// phaseOf is the phase of an entry of phases.
func phaseOf(entry string) workspacesv1.WorkspacePhase {
	p, _, _ := strings.Cut(entry, " ")
	return workspacesv1.WorkspacePhase(p)
}
