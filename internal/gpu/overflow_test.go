package gpu

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A GPU request past int64 counts as math.MaxInt64, never as what
// Quantity.Value makes of it (1e30 became math.MinInt64, then 0).
func TestPodRequestPastInt64CountsAsTheMost(t *testing.T) {
	g := NewWithT(t)
	huge := corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceNVIDIA: resource.MustParse("1e30")}}
	most := corev1.ResourceRequirements{Requests: corev1.ResourceList{ResourceNVIDIA: *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)}}
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: huge}}}}
	g.Expect(PodRequest(p, ResourceNVIDIA)).To(Equal(int64(math.MaxInt64)))
	p = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: most}, {Resources: most}},
		InitContainers: []corev1.Container{{Resources: most, RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}}}
	g.Expect(PodRequest(p, ResourceNVIDIA)).To(Equal(int64(math.MaxInt64)), "a sum past int64 saturates")
}

// A node's allocatable GPUs past int64 count as none, never more than it has.
func TestAllocatablePastInt64CountsAsNone(t *testing.T) {
	g := NewWithT(t)
	n := node("a", nil, nil)
	n.Status.Allocatable[ResourceNVIDIA] = resource.MustParse("1e30")
	g.Expect(Offers(&n)).To(BeEmpty())
	n.Status.Allocatable[ResourceNVIDIA] = resource.MustParse("7.5")
	g.Expect(Offers(&n)).To(ConsistOf(HaveField("Allocatable", int64(7))), "rounded down")
}
