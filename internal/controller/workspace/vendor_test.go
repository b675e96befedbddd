package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceAdmissionIsWrittenWithItsVendor watches GPU workspaces whose
// vendor the gate finds on the nodes: every version of a workspace that
// shows an admission also shows the vendor it was admitted for, so that a
// reconcile reading any of them (from a cache a write behind, or after a
// restart) renders the same values, and the ServiceSet is written once.
func TestWorkspaceAdmissionIsWrittenWithItsVendor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "vendor")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "H100-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-h100", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())

	wc, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		g.Expect(controllertest.Env.Client.Create(ctx, gpuWorkspace(ns, name, "g-"+ns, "c1", model, 1))).To(Succeed())
	}
	running := map[string]bool{}
	timeout := time.After(2 * time.Minute)
	for len(running) < len(names) {
		select {
		case ev := <-w.ResultChan():
			obj, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			if obj.Status.Admission != nil {
				r := obj.Status.ResolvedResources
				g.Expect(r != nil && r.PerReplica != nil && r.PerReplica.GPUVendor != nil).To(BeTrue(),
					"workspace %s at resourceVersion %s shows an admission without the vendor it was admitted for", obj.Name, obj.ResourceVersion)
			}
			if obj.Status.Phase == workspacesv1.PhaseRunning {
				running[obj.Name] = true
			}
		case <-timeout:
			t.Fatalf("only %v of %v ran within 2 minutes", running, names)
		}
	}
	for _, name := range names {
		ss := &k0rdentv1beta1.ServiceSet{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + name}, ss)).To(Succeed())
		g.Expect(ss.Generation).To(BeEquivalentTo(1), "ServiceSet of %s written once", name)
	}
}
