package world

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func cd(name string, annotations map[string]string) *k0rdentv1beta1.ClusterDeployment {
	return &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations}}
}

// TestKubeconfigForRoutesInOrder: routers first, then the annotation's
// route, the cluster's own, the regional annotation, the child.
func TestKubeconfigForRoutesInOrder(t *testing.T) {
	g := NewWithT(t)
	r := &Running{}
	r.Route(RouteChild, []byte("child"))
	r.Route(RouteRegional, []byte("regional"))
	r.Route("tenant-a", []byte("tenant-a"))
	r.Route("ns/own", []byte("own"))
	r.Route("ns/adopted", nil)
	r.Router(func(c *k0rdentv1beta1.ClusterDeployment) []byte {
		if c.Name == "down" {
			return []byte("nowhere")
		}
		return nil
	})

	g.Expect(string(r.KubeconfigFor(cd("plain", nil)))).To(Equal("child"))
	g.Expect(string(r.KubeconfigFor(cd("far", map[string]string{RegionalAnnotation: "true"})))).To(Equal("regional"))
	g.Expect(string(r.KubeconfigFor(cd("far", map[string]string{RegionalAnnotation: "false"})))).To(Equal("child"))
	g.Expect(string(r.KubeconfigFor(cd("own", map[string]string{RegionalAnnotation: "true"})))).To(Equal("own"))
	g.Expect(string(r.KubeconfigFor(cd("own", map[string]string{KubeconfigAnnotation: "tenant-a"})))).To(Equal("tenant-a"))
	g.Expect(string(r.KubeconfigFor(cd("x", map[string]string{KubeconfigAnnotation: "unknown"})))).To(Equal("child"))
	g.Expect(string(r.KubeconfigFor(cd("down", map[string]string{KubeconfigAnnotation: "tenant-a"})))).To(Equal("nowhere"))
	g.Expect(r.KubeconfigFor(cd("adopted", nil))).To(BeNil(), "a nil route gives no kubeconfig")

	r.Unroute("ns/own")
	g.Expect(string(r.KubeconfigFor(cd("own", nil)))).To(Equal("child"))
}

// TestPanicked finds the first panic or fatal error of a log.
func TestPanicked(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Panicked("ok\nstill ok\n")).To(BeEmpty())
	g.Expect(Panicked("ok\npanic: boom\nfatal error: later\n")).To(Equal("panic: boom"))
	g.Expect(Panicked(`{"msg":"Observed a panic"}`)).To(ContainSubstring("Observed a panic"))
}
