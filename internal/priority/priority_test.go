package priority

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func cm(rv, state string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "set", ResourceVersion: rv}, Data: map[string]string{"state": state}}
}

// toOwners maps the ConfigMap to two owners, one of them twice.
func toOwners(_ context.Context, o *corev1.ConfigMap) []reconcile.Request {
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: "b"}}
	return []reconcile.Request{a, b, a}
}

func deployed(old, updated *corev1.ConfigMap) bool {
	return old.Data["state"] != "Deployed" && updated.Data["state"] == "Deployed"
}

// drain returns the queued requests with their priorities.
func drain(g gomega.Gomega, q priorityqueue.PriorityQueue[reconcile.Request]) map[string]int {
	out := map[string]int{}
	g.Eventually(q.Len).WithTimeout(time.Second).ShouldNot(gomega.BeZero())
	for q.Len() > 0 {
		item, p, _ := q.GetWithPriority()
		out[item.Name] = p
		q.Done(item)
	}
	return out
}

func TestMapOnUpdate(t *testing.T) {
	h := MapOnUpdate(toOwners, deployed, Outcome)
	tests := []struct {
		name     string
		send     func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		priority int
	}{
		{name: "an update it raises", priority: Outcome, send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("1", "Provisioning"), ObjectNew: cm("2", "Deployed")}, q)
		}},
		{name: "an update it does not raise", priority: Default, send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("1", ""), ObjectNew: cm("2", "Provisioning")}, q)
		}},
		{name: "a resync", priority: Low, send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("2", "Deployed"), ObjectNew: cm("2", "Deployed")}, q)
		}},
		{name: "a create", priority: Default, send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.TypedCreateEvent[*corev1.ConfigMap]{Object: cm("2", "Deployed")}, q)
		}},
		{name: "a create of the initial list", priority: Low, send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.TypedCreateEvent[*corev1.ConfigMap]{Object: cm("2", "Deployed"), IsInInitialList: true}, q)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tt.send(q)
			g.Expect(drain(g, q)).To(gomega.Equal(map[string]int{"a": tt.priority, "b": tt.priority}))
		})
	}
}

// TestRaisedRequestsOvertakeTheBacklog queues a backlog of creations, then
// one raised update: the raised owner comes out first.
func TestRaisedRequestsOvertakeTheBacklog(t *testing.T) {
	g := gomega.NewWithT(t)
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	backlog := MapOnUpdate(func(_ context.Context, o *corev1.ConfigMap) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}, deployed, Outcome)
	for _, name := range []string{"w1", "w2", "w3"} {
		o := cm("1", "")
		o.Name = name
		backlog.Create(context.Background(), event.TypedCreateEvent[*corev1.ConfigMap]{Object: o}, q)
	}
	waited := cm("1", "Provisioning")
	waited.Name = "waited"
	now := cm("2", "Deployed")
	now.Name = "waited"
	backlog.Update(context.Background(), event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: waited, ObjectNew: now}, q)
	g.Eventually(q.Len).WithTimeout(time.Second).Should(gomega.Equal(4))
	first, p, _ := q.GetWithPriority()
	g.Expect(first.Name).To(gomega.Equal("waited"))
	g.Expect(p).To(gomega.Equal(Outcome))
}

func TestMapOnUpdateWithoutAPriorityQueue(t *testing.T) {
	g := gomega.NewWithT(t)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	MapOnUpdate(toOwners, deployed, Outcome).Update(context.Background(),
		event.TypedUpdateEvent[*corev1.ConfigMap]{ObjectOld: cm("1", "Provisioning"), ObjectNew: cm("2", "Deployed")}, q)
	g.Expect(q.Len()).To(gomega.Equal(2))
}
