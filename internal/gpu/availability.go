package gpu

import (
	corev1 "k8s.io/api/core/v1"
)

// Capacity is the GPU capacity behind a node selector.
type Capacity struct {
	// ResourceName is the extended resource counted, nvidia.com/gpu or amd.com/gpu.
	ResourceName string
	// Vendor is the vendor of the first matching node (its exalsius.ai/gpu-vendor
	// label, else the vendor of ResourceName).
	Vendor string
	// Total is the allocatable amount of ResourceName over the matching nodes.
	Total int64
	// Free is Total minus what the live pods on the matching nodes request, at least 0.
	Free int64
	// Nodes is the number of matching nodes.
	Nodes int
}

// Availability computes the GPU capacity of the nodes a selector places on.
//
// A node matches when it is schedulable (see Schedulable), carries every
// selector entry as a label with the same value, and has a positive
// allocatable amount of nvidia.com/gpu or amd.com/gpu. The resource and
// vendor come from the first matching node by name (NVIDIA first when a node
// offers both). Free subtracts, for every pod bound to a matching node and
// not Succeeded or Failed, the amount of that resource its containers
// request, or their limit when no request is given (Kubernetes defaults
// extended-resource requests to limits); init containers are ignored.
// It returns false, and a zero Capacity, when no node matches.
func Availability(nodes []corev1.Node, pods []corev1.Pod, selector map[string]string) (Capacity, bool) {
	var c Capacity
	matching := map[string]bool{}
	for _, n := range sortedByName(nodes) {
		if !Schedulable(n) || !hasLabels(n, selector) {
			continue
		}
		resource, vendor := firstGPUResource(n)
		if resource == "" {
			continue
		}
		if c.ResourceName == "" {
			c.ResourceName, c.Vendor = resource, vendorOf(n, vendor)
		}
		matching[n.Name] = true
		c.Nodes++
		// A node of another vendor, or a bogus negative amount, adds nothing.
		c.Total += max(allocatable(n, c.ResourceName), 0)
	}
	if c.Nodes == 0 {
		return Capacity{}, false
	}
	var used int64
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || !matching[p.Spec.NodeName] ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		used += PodRequest(p, corev1.ResourceName(c.ResourceName))
	}
	c.Free = max(c.Total-used, 0)
	return c, true
}

// hasLabels reports whether the node carries every selector entry.
func hasLabels(n *corev1.Node, selector map[string]string) bool {
	for k, v := range selector {
		got, ok := n.Labels[k]
		if !ok || got != v {
			return false
		}
	}
	return true
}

// firstGPUResource returns the first GPU resource the node offers, with its inferred vendor.
func firstGPUResource(n *corev1.Node) (string, string) {
	for _, r := range gpuResources {
		if allocatable(n, r.resource) > 0 {
			return r.resource, r.vendor
		}
	}
	return "", ""
}

// PodRequest is what a pod takes of a resource as the scheduler counts it:
// its containers' requests summed (with restartable init containers, the
// sidecars), or its largest other init container when that is more. A
// container that sets no request is counted at its limit, which is what
// Kubernetes defaults the request of an extended resource to.
func PodRequest(p *corev1.Pod, resource corev1.ResourceName) int64 {
	var sum, initMax int64
	for i := range p.Spec.Containers {
		sum += containerRequest(&p.Spec.Containers[i].Resources, resource)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := containerRequest(&c.Resources, resource)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum += r
		} else {
			initMax = max(initMax, r)
		}
	}
	return max(sum, initMax)
}

func containerRequest(res *corev1.ResourceRequirements, resource corev1.ResourceName) int64 {
	if q, ok := res.Requests[resource]; ok {
		return max(q.Value(), 0)
	}
	if q, ok := res.Limits[resource]; ok {
		return max(q.Value(), 0)
	}
	return 0
}
