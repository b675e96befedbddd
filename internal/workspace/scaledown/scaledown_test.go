package scaledown

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// expect asserts obj's replicas and saved annotation ("" for none).
func expect(t *testing.T, obj client.Object, replicas int64, key, saved string) {
	t.Helper()
	g := NewWithT(t)
	n, ann := state(t, obj)
	g.Expect(n).To(Equal(replicas), "replicas of %s", obj.GetName())
	if saved == "" {
		g.Expect(ann).NotTo(HaveKey(key), "annotations of %s", obj.GetName())
	} else {
		g.Expect(ann).To(HaveKeyWithValue(key, saved), "annotations of %s", obj.GetName())
	}
}

// patchSpec stands for Helm resetting an object's spec while it is stopped.
func patchSpec(t *testing.T, obj client.Object, spec string) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`))
	NewWithT(t).Expect(child.Client.Patch(context.Background(), obj, p)).To(Succeed())
}

func TestStopScalesOnlyItsReleaseAndStartRestoresIt(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 3)
	s := statefulSet(t, ns, "db", "a", 2)
	cj := cronJob(t, ns, "backup", "a", false)
	idle := deployment(t, ns, "idle", "a", 0)
	other := deployment(t, ns, "other", "b", 2)
	foreign := deployment(t, ns, "foreign", "a", 2)
	foreign.Annotations[helmReleaseNamespace] = "elsewhere"
	g.Expect(child.Client.Update(ctx, foreign)).To(Succeed())

	res, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Record).To(Equal(Record{"Deployment/web": 3, "StatefulSet/db": 2, "CronJob/backup": 1}))
	g.Expect(res.Scaled).To(Equal(3))
	g.Expect(res.Reverted).To(BeZero())
	g.Expect(res.Remaining).To(BeZero())
	g.Expect(res.Stopped()).To(BeTrue())
	g.Expect(res.Objects).To(ConsistOf("Deployment/web", "StatefulSet/db", "CronJob/backup"))
	expect(t, d, 0, ReplicasAnnotation, "3")
	expect(t, s, 0, ReplicasAnnotation, "2")
	expect(t, cj, 0, SuspendAnnotation, "false")
	expect(t, idle, 0, ReplicasAnnotation, "")
	expect(t, other, 2, ReplicasAnnotation, "")
	expect(t, foreign, 2, ReplicasAnnotation, "")

	res, err = Start(ctx, child.Client, ns, "a", res.Record, MaxSavedReplicas)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(Equal(3))
	g.Expect(res.Remaining).To(Equal(3))
	g.Expect(res.Warnings).To(BeEmpty())
	expect(t, d, 3, ReplicasAnnotation, "")
	expect(t, s, 2, ReplicasAnnotation, "")
	expect(t, cj, 1, SuspendAnnotation, "")
	expect(t, idle, 0, ReplicasAnnotation, "")
	expect(t, other, 2, ReplicasAnnotation, "")
}

func TestStopTwiceKeepsTheSavedCounts(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 3)
	cj := cronJob(t, ns, "backup", "a", false)
	first, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())

	res, err := Stop(ctx, child.Client, ns, "a", first.Record)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(Result{Record: first.Record}))
	expect(t, d, 0, ReplicasAnnotation, "3")
	expect(t, cj, 0, SuspendAnnotation, "false")
}

func TestStopRevertsAHelmReset(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 3)
	cj := cronJob(t, ns, "backup", "a", false)
	first, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	patchSpec(t, d, `{"replicas":1}`) // the chart pins replicas: 1
	patchSpec(t, cj, `{"suspend":false}`)

	obs, err := Observe(ctx, child.Client, ns, "a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.Remaining).To(Equal(2))

	res, err := Stop(ctx, child.Client, ns, "a", first.Record)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Reverted).To(Equal(2))
	g.Expect(res.Scaled).To(BeZero())
	g.Expect(res.Remaining).To(BeZero())
	expect(t, d, 0, ReplicasAnnotation, "3")
	expect(t, cj, 0, SuspendAnnotation, "false")

	_, err = Start(ctx, child.Client, ns, "a", res.Record, MaxSavedReplicas)
	g.Expect(err).NotTo(HaveOccurred())
	expect(t, d, 3, ReplicasAnnotation, "")
	expect(t, cj, 1, SuspendAnnotation, "")
}

func TestStartWithoutStopChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 3)
	cj := cronJob(t, ns, "backup", "a", true)
	res, err := Start(ctx, child.Client, ns, "a", nil, MaxSavedReplicas)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(BeZero())
	g.Expect(res.Objects).To(BeEmpty())
	for _, obj := range []client.Object{d, cj} {
		rv := obj.GetResourceVersion()
		g.Expect(child.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(obj.GetResourceVersion()).To(Equal(rv), "%s was written", obj.GetName())
	}
	// A CronJob suspended before Stop stays suspended after Start.
	res, err = Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	expect(t, cj, 0, SuspendAnnotation, "")
	_, err = Start(ctx, child.Client, ns, "a", res.Record, MaxSavedReplicas)
	g.Expect(err).NotTo(HaveOccurred())
	expect(t, cj, 0, SuspendAnnotation, "")
	expect(t, d, 3, ReplicasAnnotation, "")
}

func TestStopSkipsAReplicaSetADeploymentOwns(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 2)
	owner := metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	ownedRS := replicaSet(t, ns, "web-abc", "a", 2, owner)
	loose := replicaSet(t, ns, "loose", "a", 4, nil)

	res, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(ConsistOf("Deployment/web", "ReplicaSet/loose"))
	expect(t, ownedRS, 2, ReplicasAnnotation, "")
	expect(t, loose, 0, ReplicasAnnotation, "4")
}

func TestStartReadsABadSavedValueAsOne(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	for i, tc := range []struct {
		saved string
		want  int64
		warns bool
	}{
		{"7", 7, false}, {"10000", 10000, false},
		{"abc", 1, true}, {"-1", 1, true}, {"0", 1, true}, {"", 1, true},
		{"10001", 1, true}, {"99999999999999999999", 1, true}, {" 3", 1, true}, {"+3", 1, true},
	} {
		d := deployment(t, ns, fmt.Sprintf("d%d", i), "a", 0)
		d.Annotations[ReplicasAnnotation] = tc.saved
		NewWithT(t).Expect(child.Client.Update(ctx, d)).To(Succeed())
		res, err := Start(ctx, child.Client, ns, "a", nil, MaxSavedReplicas)
		g := NewWithT(t)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Restored).To(Equal(1), "saved %q", tc.saved)
		if tc.warns {
			g.Expect(res.Warnings).To(ConsistOf(ContainSubstring("Deployment/" + d.Name)))
		} else {
			g.Expect(res.Warnings).To(BeEmpty())
		}
		expect(t, d, tc.want, ReplicasAnnotation, "")
	}
}

func TestStopRefusesMoreObjectsThanTheLimit(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	r := runner{kinds: kinds, limit: 3}
	for i := range 3 {
		deployment(t, ns, fmt.Sprintf("d%d", i), "a", 1)
	}
	res, err := r.run(ctx, child.Client, ns, "a", stopNew)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Scaled).To(Equal(3))

	fourth := deployment(t, ns, "d3", "other", 1)
	_, err = r.run(ctx, child.Client, ns, "a", stopNew)
	g.Expect(err).To(MatchError(ContainSubstring("more than 3 Deployment")))
	_, err = r.observe(ctx, child.Client, ns, "a")
	g.Expect(err).To(MatchError(ContainSubstring("more than 3 Deployment")))
	expect(t, fourth, 1, ReplicasAnnotation, "")
}

func TestStopSkipsKindsTheChildDoesNotServe(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 2)
	unserved := kind{gvk: schema.GroupVersionKind{Group: "example.invalid", Version: "v1", Kind: "Widget"}}

	optional := unserved
	optional.optional = true
	res, err := runner{kinds: append([]kind{optional}, kinds...), limit: ListLimit}.run(ctx, child.Client, ns, "a", stopNew)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Scaled).To(Equal(1))
	expect(t, d, 0, ReplicasAnnotation, "2")

	_, err = runner{kinds: append([]kind{unserved}, kinds...), limit: ListLimit}.run(ctx, child.Client, ns, "a", startLegacy)
	g.Expect(err).To(MatchError(ContainSubstring("listing Widget")))
}

func TestLeaderWorkerSet(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	lws := leaderWorkerSet(t, ns, "llm", "a", 2)

	res, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(ConsistOf("LeaderWorkerSet/llm"))
	expect(t, lws, 0, ReplicasAnnotation, "2")

	_, err = Start(ctx, child.Client, ns, "a", res.Record, MaxSavedReplicas)
	g.Expect(err).NotTo(HaveOccurred())
	expect(t, lws, 2, ReplicasAnnotation, "")
}

// TestStopRetriesOnConflict changes the object between Stop's read and its
// write: the stale patch must fail its resourceVersion precondition, and
// the retry must save the replicas the object has now.
func TestStopRetriesOnConflict(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 3)
	raced := false
	c, err := client.NewWithWatch(child.Config, client.Options{Scheme: child.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	racing := interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if !raced {
				raced = true
				patchSpec(t, d, `{"replicas":5}`)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	res, err := Stop(ctx, racing, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raced).To(BeTrue())
	g.Expect(res.Scaled).To(Equal(1))
	g.Expect(res.Record).To(Equal(Record{"Deployment/web": 5}))
	expect(t, d, 0, ReplicasAnnotation, "5")
}

// TestObserveCountsThePodsOfTheRelease builds the chain a Deployment
// leaves (ReplicaSet, Pod) by hand, as envtest runs no controllers.
func TestObserveCountsThePodsOfTheRelease(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	d := deployment(t, ns, "web", "a", 1)
	rs := replicaSet(t, ns, "web-abc", "", 1, metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment")))
	for i, owner := range []client.Object{rs, rs, d} {
		p := podTemplate.DeepCopy()
		p.Name, p.Namespace = fmt.Sprintf("p%d", i), ns
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
		create(t, podFrom(p))
	}
	stranger := podFrom(podTemplate.DeepCopy())
	stranger.Name, stranger.Namespace = "stranger", ns
	create(t, stranger)

	_, err := Stop(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := Observe(ctx, child.Client, ns, "a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Remaining).To(BeZero())
	g.Expect(res.Pods).To(Equal(3))
}

// stopNew and startLegacy are Stop's and Start's patches without a record.
func stopNew(o object) (map[string]any, outcome, error) { return stopPatch(o, nil, Record{}) }

func startLegacy(o object) (map[string]any, outcome, error) {
	return startPatch(o, nil, MaxSavedReplicas)
}
