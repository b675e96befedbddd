package gpu

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeOpt changes a test node.
type nodeOpt func(*corev1.Node)

func cordoned() nodeOpt { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }

func ready(s corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: s})
	}
}

func tainted() nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule})
	}
}

// node builds a node with labels and allocatable GPU amounts.
func node(name string, labels map[string]string, alloc map[string]int64, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	for r, v := range alloc {
		n.Status.Allocatable[corev1.ResourceName(r)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func gpus(resourceName string, n int64) map[string]int64 { return map[string]int64{resourceName: n} }

// container describes the GPU requests and limits of one container.
type container struct{ request, limit int64 }

// pod builds a pod bound to a node with containers asking for a GPU resource.
func pod(name, nodeName string, phase corev1.PodPhase, resourceName string, cs ...container) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	p.Spec.NodeName = nodeName
	p.Status.Phase = phase
	for _, c := range cs {
		res := corev1.ResourceRequirements{}
		if c.request > 0 {
			res.Requests = corev1.ResourceList{corev1.ResourceName(resourceName): *resource.NewQuantity(c.request, resource.DecimalSI)}
		}
		if c.limit > 0 {
			res.Limits = corev1.ResourceList{corev1.ResourceName(resourceName): *resource.NewQuantity(c.limit, resource.DecimalSI)}
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Resources: res})
	}
	return p
}

func ptr[T any](v T) *T { return &v }
