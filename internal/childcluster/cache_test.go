package childcluster

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/apiaryhq/apiary/internal/testenv"
)

const eventually = 30 * time.Second

func nodeNames(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func findNode(nodes []corev1.Node, name string) *corev1.Node {
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i]
		}
	}
	return nil
}

func TestWatchListsTrimmedNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{})
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])
	node := createNode(t, children[0], "8")

	cc, err := m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cc.Synced()).To(BeTrue())
	g.Expect(cc.LastError()).NotTo(HaveOccurred())
	g.Eventually(func() []string {
		nodes, err := cc.ListNodes(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return nodeNames(nodes)
	}, eventually).Should(ContainElement(node.Name))

	nodes, err := cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	got := findNode(nodes, node.Name)
	g.Expect(got.Labels).To(HaveKeyWithValue("nvidia.com/gpu.product", "H100"))
	g.Expect(got.Status.Allocatable).To(HaveKeyWithValue(corev1.ResourceName("nvidia.com/gpu"), resource.MustParse("8")))
	g.Expect(got.Status.Conditions).To(ConsistOf(HaveField("Status", corev1.ConditionTrue)))
	g.Expect(got.Annotations).To(BeEmpty(), "annotations are dropped")
	g.Expect(got.ManagedFields).To(BeEmpty(), "managedFields are dropped")
	g.Expect(got.Status.Conditions[0].LastHeartbeatTime.IsZero()).To(BeTrue(), "heartbeats are dropped")

	_, err = cc.ListPods(ctx)
	g.Expect(err).To(MatchError(ErrPodsNotWatched), "a colony-only watch starts no Pod informer")

	again, err := m.Watch(ctx, cd, "colony/ns/b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(cc), "owners share one cache")
}

// createPod creates a Pod bound to node in a new namespace of child.
func createPod(t *testing.T, child *testenv.Environment, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	ns := child.NewNamespace(t, "pods")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	_ = child.Client.Create(ctx, sa)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-" + rand.String(5), Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: new(false),
			Containers: []corev1.Container{{
				Name: "main", Image: "example.invalid/train:1",
				Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "dropped"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
				},
			}},
		},
	}
	if err := child.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	return p
}

func TestWatchWithPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{IdleTimeout: stopAtOnce})
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])
	node := createNode(t, children[0], "4")
	pod := createPod(t, children[0], node.Name)

	colony, err := m.Watch(ctx, cd, "colony/ns/c")
	g.Expect(err).NotTo(HaveOccurred())
	cc, err := m.Watch(ctx, cd, "workspace/ns/w", WatchOptions{Pods: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cc).To(BeIdenticalTo(colony), "Pods start lazily in the running cache")

	var got *corev1.Pod
	g.Eventually(func() *corev1.Pod {
		pods, err := cc.ListPods(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		for i := range pods {
			if pods[i].Name == pod.Name && pods[i].Namespace == pod.Namespace {
				got = &pods[i]
			}
		}
		return got
	}, eventually).ShouldNot(BeNil())
	g.Expect(got.Spec.NodeName).To(Equal(node.Name))
	g.Expect(got.Spec.Containers).To(HaveLen(1))
	g.Expect(got.Spec.Containers[0].Resources.Requests).To(HaveKeyWithValue(corev1.ResourceName("nvidia.com/gpu"), resource.MustParse("2")))
	g.Expect(got.Spec.Containers[0].Env).To(BeEmpty(), "env is dropped")
	g.Expect(got.Spec.Containers[0].Image).To(BeEmpty(), "images are dropped")
	g.Expect(got.Labels).To(BeEmpty(), "labels are dropped")
	g.Expect(got.Status.Phase).To(Equal(corev1.PodPending))

	m.Release(cd, "workspace/ns/w")
	_, err = cc.ListPods(ctx)
	g.Expect(err).To(MatchError(ErrPodsNotWatched), "the Pod informer stops with its last user")
	_, err = cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the colony still reads nodes")
}

func TestReleaseOfTheLastOwnerStopsTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{IdleTimeout: stopAtOnce})
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])

	cc, err := m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = m.Watch(ctx, cd, "workspace/ns/w", WatchOptions{Pods: true})
	g.Expect(err).NotTo(HaveOccurred())

	m.Release(cd, "colony/ns/a")
	g.Expect(cc.Synced()).To(BeTrue(), "another owner still uses it")
	m.Release(cd, "workspace/ns/w")
	g.Expect(cc.Synced()).To(BeFalse())
	_, err = cc.ListNodes(ctx)
	g.Expect(err).To(MatchError(ErrCacheStopped))
	g.Expect(m.Owners(cd)).To(BeEmpty())

	next, err := m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next).NotTo(BeIdenticalTo(cc), "a new Watch starts a new cache")
	m.Forget(cd)
	_, err = next.ListNodes(ctx)
	g.Expect(err).To(MatchError(ErrCacheStopped))
}

func TestCacheIsRebuiltWhenTheSecretChanges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{})
	events := m.Subscribe()
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])
	first, second := createNode(t, children[0], "1"), createNode(t, children[1], "1")

	cc, err := m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	writeKubeconfig(t, cd, kubeconfigs[1])
	next, err := m.Watch(ctx, cd, "colony/ns/b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next).NotTo(BeIdenticalTo(cc))
	_, err = cc.ListNodes(ctx)
	g.Expect(err).To(MatchError(ErrCacheStopped), "the old cache stops")
	g.Eventually(events, eventually).Should(Receive(HaveField("Object.GetName()", cd.Name)),
		"owners of the old cache are told to watch again")

	g.Eventually(func() []string {
		nodes, err := next.ListNodes(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return nodeNames(nodes)
	}, eventually).Should(And(ContainElement(second.Name), Not(ContainElement(first.Name))))
	g.Expect(m.Owners(cd)).To(ConsistOf("colony/ns/a", "colony/ns/b"), "owners stay with the cluster")
}

// receiveFor waits for an event about cd, skipping others.
func receiveFor(g Gomega, events <-chan event.GenericEvent, cd types.NamespacedName) {
	g.Eventually(func() bool {
		select {
		case e := <-events:
			return client.ObjectKeyFromObject(e.Object) == cd
		default:
			return false
		}
	}, eventually, 10*time.Millisecond).Should(BeTrue(), "an event for %s", cd)
}

func TestChangesInAChildAreNotified(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{})
	all := m.Events()
	nodeEvents := m.Subscribe(NodeKind)
	podEvents := m.Subscribe(PodKind)
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])
	_, err := m.Watch(ctx, cd, "workspace/ns/w", WatchOptions{Nodes: true, Pods: true})
	g.Expect(err).NotTo(HaveOccurred())

	node := createNode(t, children[0], "2")
	receiveFor(g, nodeEvents, cd)

	var e event.GenericEvent
	g.Eventually(all, eventually).Should(Receive(&e))
	g.Expect(e.Object.GetObjectKind().GroupVersionKind().Kind).To(Equal("ClusterDeployment"))
	g.Expect(client.ObjectKeyFromObject(e.Object)).To(Equal(cd))

	createPod(t, children[0], node.Name)
	receiveFor(g, podEvents, cd)

	g.Expect(children[0].Client.Delete(ctx, node)).To(Succeed())
	receiveFor(g, nodeEvents, cd)
}

func TestUnreachableAfterSyncSetsLastError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := startProxy(t, children[0].Config.Host)
	m := newManager(t, Options{})
	events := m.Subscribe(PodKind) // reachability changes reach every subscriber
	cd := newCluster(t)
	writeKubeconfig(t, cd, withServer(t, kubeconfigs[0], "https://"+p.addr))
	node := createNode(t, children[0], "1")
	cc, err := m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cc.LastError()).NotTo(HaveOccurred())
	g.Expect(m.States()).To(ConsistOf(ClusterState{Cluster: cd, CacheOpen: true}))

	p.cut()
	g.Eventually(cc.LastError, 2*time.Minute).Should(Satisfy(IsUnreachable))
	g.Expect(m.States()).To(ConsistOf(ClusterState{Cluster: cd, CacheOpen: true, Unreachable: true}))
	g.Expect(cc.LastError().Error()).To(ContainSubstring(cd.String()))
	receiveFor(g, events, cd)
	nodes, err := cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the last data stays readable")
	g.Expect(nodeNames(nodes)).To(ContainElement(node.Name))

	p.restore(t)
	g.Eventually(cc.LastError, 2*time.Minute).Should(Succeed())
	g.Expect(m.States()).To(ConsistOf(ClusterState{Cluster: cd, CacheOpen: true}))
	receiveFor(g, events, cd)
}

func TestStopEndsEveryGoroutine(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	if mgmt == nil {
		t.Skip("no control plane while fuzzing")
	}
	m := NewManager(mgmt.Client, Options{})
	_ = m.Events()
	for i := range children {
		cd := newCluster(t)
		writeKubeconfig(t, cd, kubeconfigs[i])
		cc, err := m.Watch(ctx, cd, "workspace/ns/w", WatchOptions{Pods: true})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { g.Expect(cc.Synced()).To(BeFalse()) })
	}
	g.Expect(leaked()).NotTo(BeEmpty(), "the check sees running informers")
	m.Stop()
	g.Expect(leaked()).To(BeEmpty())
	_, err := m.Watch(ctx, newCluster(t), "colony/ns/a")
	g.Expect(err).To(MatchError(ErrManagerStopped))
}

// leaked returns the stacks of goroutines of this package or of informers.
func leaked() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, stack := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(stack, "childcluster.(*") || strings.Contains(stack, "client-go/tools/cache.") ||
			strings.Contains(stack, "pkg/cache/internal.") {
			out = append(out, stack)
		}
	}
	return out
}
