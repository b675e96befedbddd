package mesh_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

const workspaceLabel = "workspaces.exalsius.ai/workspace"

// TestNamespaceLabelsFollowTheMeshMode runs one workspace through every mesh
// mode, restarting the manager with another --workspace-mesh-mode or
// --workspace-waypoint-enabled each time: its namespace on the child carries
// the labels of the mode (those of the previous mode removed, the
// workspace's and others' kept) without any change to the workspace. The
// first labels are there before the ServiceSet exists.
func TestNamespaceLabelsFollowTheMeshMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, "labels")
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	sets, err := wc.Watch(ctx, &k0rdentv1beta1.ServiceSetList{}, client.InNamespace(tn.ns))
	g.Expect(err).NotTo(HaveOccurred())
	defer sets.Stop()

	p := apiary(t, tn.flags("ambient", true))
	key := tn.workspace(t, "nb")

	// The moment the ServiceSet appears, the namespace is labelled.
	select {
	case e := <-sets.ResultChan():
		g.Expect(e.Type).To(Equal(watch.Added))
		ns := &corev1.Namespace{}
		g.Expect(childC.Get(ctx, client.ObjectKey{Name: "ws-" + key.Name}, ns)).To(Succeed(), "the namespace exists before the ServiceSet")
		g.Expect(ns.Labels).To(HaveKeyWithValue("istio.io/dataplane-mode", "ambient"))
	case <-time.After(timeout):
		t.Fatal("no ServiceSet")
	}
	w := running(t, key)
	generation := w.Generation
	labels := childNamespaceLabels(g, key.Name)
	g.Expect(labels).To(HaveKeyWithValue(workspaceLabel, key.Name))
	g.Expect(labels).To(HaveKeyWithValue("istio.io/dataplane-mode", "ambient"))
	g.Expect(labels).To(HaveKeyWithValue("istio.io/use-waypoint", "c1-waypoint"))
	g.Expect(labels).To(HaveKeyWithValue("istio.io/use-waypoint-namespace", tn.waypoints))
	g.Expect(labels).To(HaveKeyWithValue("istio.io/ingress-use-waypoint", "true"))
	g.Expect(labels).NotTo(HaveKey("istio-injection"))

	// Someone else's label stays through every mode.
	ns := &corev1.Namespace{}
	g.Expect(childC.Get(ctx, client.ObjectKey{Name: "ws-" + key.Name}, ns)).To(Succeed())
	ns.Labels["team"] = "ml"
	g.Expect(childC.Update(ctx, ns)).To(Succeed())

	mesh := []string{"istio.io/dataplane-mode", "istio.io/use-waypoint", "istio.io/use-waypoint-namespace",
		"istio.io/ingress-use-waypoint", "istio-injection"}
	for _, step := range []struct {
		mode      string
		waypoints bool
		want      map[string]string
	}{
		{"ambient", false, map[string]string{"istio.io/dataplane-mode": "ambient"}},
		{"sidecar", true, map[string]string{"istio-injection": "enabled"}},
		{"none", true, map[string]string{}},
		{"ambient", true, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "c1-waypoint",
			"istio.io/use-waypoint-namespace": tn.waypoints, "istio.io/ingress-use-waypoint": "true"}},
	} {
		p.RestartWith(tn.flags(step.mode, step.waypoints).options())
		g.Eventually(func(g Gomega) {
			labels := childNamespaceLabels(g, key.Name)
			for _, k := range mesh {
				if v, ok := step.want[k]; ok {
					g.Expect(labels).To(HaveKeyWithValue(k, v), "mode %s, waypoints %t", step.mode, step.waypoints)
				} else {
					g.Expect(labels).NotTo(HaveKey(k), "mode %s, waypoints %t", step.mode, step.waypoints)
				}
			}
			g.Expect(labels).To(HaveKeyWithValue(workspaceLabel, key.Name))
			g.Expect(labels).To(HaveKeyWithValue("team", "ml"))
		}, timeout, 200*time.Millisecond).Should(Succeed())
		g.Expect(get(g, key).Generation).To(Equal(generation), "the workspace did not change")
	}
}
