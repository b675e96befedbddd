package admission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/apiaryhq/apiary/internal/gpu"
)

// NodesFrom converts a cluster's nodes, schedulability and GPU offers read
// with the same rules as the Colony's GPU inventory.
func NodesFrom(nodes []corev1.Node) []Node {
	out := make([]Node, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		node := Node{Name: n.Name, Labels: n.Labels, Schedulable: gpu.Schedulable(n)}
		for _, o := range gpu.Offers(n) {
			node.GPUs = append(node.GPUs, GPU{Resource: o.Resource, Vendor: o.Vendor, Allocatable: o.Allocatable})
		}
		out = append(out, node)
	}
	return out
}

// PodsFrom converts the pods that hold GPUs: bound to a node, not Succeeded
// or Failed (terminating pods still hold theirs), with a GPU request as the
// scheduler counts it. owner names the workspace a pod's namespace belongs
// to, or "" for any other pod.
func PodsFrom(pods []corev1.Pod, owner func(namespace string) string) []Pod {
	var out []Pod
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var use map[string]int64
		for _, r := range gpu.Resources() {
			if v := gpu.PodRequest(p, corev1.ResourceName(r)); v > 0 {
				if use == nil {
					use = map[string]int64{}
				}
				use[r] = v
			}
		}
		if use == nil {
			continue
		}
		out = append(out, Pod{Node: p.Spec.NodeName, Workspace: owner(p.Namespace), GPUs: use})
	}
	return out
}
