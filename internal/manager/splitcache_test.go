package manager

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/shard"
)

// bucketOf is a bucket shard index of shards desires.
func bucketOf(index, shards int) string {
	return shard.FormatBucket(shard.BucketsOf(index, shards)[0])
}

// TestShardCacheHoldsItsOwnBuckets: the cache of shard 0 of 2 holds the
// workspaces and Secrets of its buckets and those without a valid bucket,
// never shard 1's; an object whose label moves between them is read, listed
// once, and its informer's handlers hear of it. Built before k0rdent's CRDs
// are installed, as a shard may be.
func TestShardCacheHoldsItsOwnBuckets(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t, "split")
	cfg := shard.Config{Index: 0, Shards: 2}
	scheme := apiaryscheme.New()
	opts := cacheOptions(Options{})
	opts.Scheme = scheme
	c, err := newShardCache(cfg, newQuarantine(env.Config, scheme, zap.New(zap.WriteTo(io.Discard))))(env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())

	labelled := func(name, bucket string) map[string]string {
		if bucket == "" {
			return nil
		}
		return map[string]string{shard.BucketLabel: bucket}
	}
	workspace := func(name, bucket string) *workspacesv1.WorkspaceDeployment {
		w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelled(name, bucket)},
			Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "class",
				ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "cd"},
				Resources:            &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](1)}}}}
		g.Expect(env.Client.Create(ctx, w)).To(Succeed())
		return w
	}
	secret := func(name, bucket string) {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelled(name, bucket)},
			StringData: map[string]string{"k": "v"}})).To(Succeed())
	}
	own, other := bucketOf(0, 2), bucketOf(1, 2)
	workspace("own", own)
	workspace("other", other)
	none := workspace("none", "")
	workspace("broken", "x")
	secret("own", own)
	secret("other", other)
	secret("none", "")

	var mu sync.Mutex
	heard := map[string][]string{}
	note := func(what string) func(any) {
		return func(o any) {
			if m, ok := o.(client.Object); ok && m.GetNamespace() == ns {
				mu.Lock()
				heard[m.GetName()] = append(heard[m.GetName()], what)
				mu.Unlock()
			}
		}
	}
	inf, err := c.GetInformer(ctx, &workspacesv1.WorkspaceDeployment{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) { note("add")(o) },
		DeleteFunc: func(o any) { note("delete")(o) }})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.GetInformer(ctx, &corev1.Secret{})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())

	names := func(g Gomega) []string {
		list := &workspacesv1.WorkspaceDeploymentList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, w := range list.Items {
			out = append(out, w.Name)
		}
		return out
	}
	cached := func(obj client.Object, name string) bool {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return !apierrors.IsNotFound(err)
	}
	g.Eventually(names).Should(ConsistOf("own", "none", "broken"))
	g.Expect(cached(&workspacesv1.WorkspaceDeployment{}, "own")).To(BeTrue())
	g.Expect(cached(&workspacesv1.WorkspaceDeployment{}, "none")).To(BeTrue())
	g.Expect(cached(&workspacesv1.WorkspaceDeployment{}, "other")).To(BeFalse())
	// Without a bucket, a workspace is cached as a summary: what finds its
	// unit, not what a reconcile would act on.
	summary, whole := &workspacesv1.WorkspaceDeployment{}, &workspacesv1.WorkspaceDeployment{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "none"}, summary)).To(Succeed())
	g.Expect(summary.Spec.ClusterDeploymentRef.Name).To(Equal("cd"))
	g.Expect(summary.Spec.WorkspaceClassRef).To(Equal("class"))
	g.Expect(summary.Spec.Resources).To(BeNil())
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "own"}, whole)).To(Succeed())
	g.Expect(whole.Spec.Resources).NotTo(BeNil())
	g.Expect(cached(&corev1.Secret{}, "own")).To(BeTrue())
	g.Expect(cached(&corev1.Secret{}, "none")).To(BeTrue())
	g.Expect(cached(&corev1.Secret{}, "other")).To(BeFalse())
	// Secrets keep the cache's transform: their data is not cached.
	s := &corev1.Secret{}
	g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "own"}, s)).To(Succeed())
	g.Expect(s.Data).To(BeEmpty())

	// Labelled with its shard's bucket, a new workspace moves from one
	// informer to the other: still read, listed once.
	patch := func(name, bucket string) {
		w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		g.Expect(env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+shard.BucketLabel+`":"`+bucket+`"}}}`)))).To(Succeed())
	}
	patch(none.Name, own)
	g.Eventually(func(g Gomega) {
		w := &workspacesv1.WorkspaceDeployment{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(none), w)).To(Succeed())
		g.Expect(w.Labels).To(HaveKeyWithValue(shard.BucketLabel, own))
	}).Should(Succeed())
	g.Consistently(names, 500*time.Millisecond).Should(ConsistOf("own", "none", "broken"))
	// Moved to the other shard's bucket, a workspace leaves the cache, and
	// the handlers hear of it; moved back, it returns.
	patch("own", other)
	g.Eventually(names).Should(ConsistOf("none", "broken"))
	patch("other", own)
	g.Eventually(names).Should(ConsistOf("none", "broken", "other"))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(heard["own"]).To(Equal([]string{"add", "delete"}))
	g.Expect(heard["other"]).To(Equal([]string{"add"}))
	g.Expect(heard["none"]).To(ContainElements("add", "delete"))
}
