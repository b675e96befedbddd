package gpu

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// PodRequest is what a pod takes of a resource as the scheduler counts it:
// its containers' requests summed (with restartable init containers, the
// sidecars), or its largest other init container when that is more. A
// container that sets no request is counted at its limit, which is what
// Kubernetes defaults the request of an extended resource to.
func PodRequest(p *corev1.Pod, resource corev1.ResourceName) int64 {
	var sum, initMax int64
	for i := range p.Spec.Containers {
		sum = addSaturating(sum, containerRequest(&p.Spec.Containers[i].Resources, resource))
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := containerRequest(&c.Resources, resource)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = addSaturating(sum, r)
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

// addSaturating adds two non-negative counts, stopping at the largest
// int64: a pod of a child cluster may ask for absurd amounts, and taking
// more than it asks is safe where taking less is not.
func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
