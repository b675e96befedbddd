package gpu

import (
	"errors"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/apiaryhq/apiary/internal/resources"
)

// PodRequest is what a pod takes of a resource as the scheduler counts it:
// its containers' requests summed (with restartable init containers, the
// sidecars), or its largest other init container when that is more. A
// container that sets no request is counted at its limit, which is what
// Kubernetes defaults the request of an extended resource to. A pod of a
// child cluster may ask for absurd amounts: the sum saturates at the
// largest int64, since taking more than it asks is safe where less is not.
func PodRequest(p *corev1.Pod, resource corev1.ResourceName) int64 {
	var sum, initMax int64
	for i := range p.Spec.Containers {
		sum = resources.SatAdd(sum, containerRequest(&p.Spec.Containers[i].Resources, resource))
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := containerRequest(&c.Resources, resource)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = resources.SatAdd(sum, r)
		} else {
			initMax = max(initMax, r)
		}
	}
	return max(sum, initMax)
}

// containerRequest is a container's request of a resource (its limit when
// it sets none), rounded up; math.MaxInt64 when beyond int64, never less.
func containerRequest(res *corev1.ResourceRequirements, resource corev1.ResourceName) int64 {
	q, ok := res.Requests[resource]
	if !ok {
		if q, ok = res.Limits[resource]; !ok {
			return 0
		}
	}
	n, err := resources.Whole.Ceil(q)
	switch {
	case errors.Is(err, resources.ErrNegative):
		return 0 // the API server refuses it
	case err != nil:
		return math.MaxInt64
	}
	return n
}
