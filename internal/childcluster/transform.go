package childcluster

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TrimNode returns the parts of a Node that GPU inventory and the GPU gate
// read: name, uid, resourceVersion, labels, spec.unschedulable, spec.taints,
// status.capacity/allocatable and the conditions' type, status, reason and
// lastTransitionTime (heartbeat times and messages are dropped, so a kubelet
// status report that changes nothing leaves the trimmed Node equal).
func TrimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:            n.Name,
			UID:             n.UID,
			ResourceVersion: n.ResourceVersion,
			Labels:          n.Labels,
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{
			Capacity:    n.Status.Capacity,
			Allocatable: n.Status.Allocatable,
		},
	}
	for _, c := range n.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, corev1.NodeCondition{
			Type:               c.Type,
			Status:             c.Status,
			Reason:             c.Reason,
			LastTransitionTime: c.LastTransitionTime,
		})
	}
	return out
}

// TrimPod returns the parts of a Pod that capacity accounting reads: name,
// namespace, uid, resourceVersion, deletionTimestamp, spec.nodeName, the name,
// resources (and, for init containers, restartPolicy) of every container and
// init container, spec.overhead, pod-level spec.resources and status.phase.
func TrimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              p.Name,
			Namespace:         p.Namespace,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			NodeName:  p.Spec.NodeName,
			Overhead:  p.Spec.Overhead,
			Resources: p.Spec.Resources,
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range p.Spec.InitContainers {
		out.Spec.InitContainers = append(out.Spec.InitContainers,
			corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	return out
}

// changed reports whether two trimmed objects differ in more than their
// resourceVersion (a resync or a change of a dropped field).
func changed(oldObj, newObj any) bool {
	o, ok := oldObj.(client.Object)
	n, same := newObj.(client.Object)
	if !ok || !same || reflect.TypeOf(o) != reflect.TypeOf(n) {
		return true
	}
	a, b := o.DeepCopyObject().(client.Object), n.DeepCopyObject().(client.Object)
	a.SetResourceVersion("")
	b.SetResourceVersion("")
	return !equality.Semantic.DeepEqual(a, b)
}
