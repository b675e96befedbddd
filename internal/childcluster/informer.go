package childcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// newInformer creates informers whose requests are observed for errors.
func (c *ClusterCache) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
	kind := NodeKind
	switch obj.(type) {
	case *corev1.Pod:
		kind = PodKind
	case *gatewayv1.Gateway:
		kind = GatewayKind
	}
	olw := &observedLW{lw: toolscache.ToListerWatcherWithContext(lw), c: c, kind: kind}
	inf := toolscache.NewSharedIndexInformer(olw, obj, resync, idx)
	olw.inf = inf
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		c.observe(inf, kind, err, false)
	})
	return inf
}

// observedLW reports the outcome of every list and watch request.
type observedLW struct {
	lw   toolscache.ListerWatcherWithContext
	c    *ClusterCache
	kind Kind
	inf  toolscache.SharedIndexInformer
}

func (o *observedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), opts)
}

func (o *observedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), opts)
}

func (o *observedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := o.lw.ListWithContext(withCluster(ctx, o.c.cluster), opts)
	o.c.observe(o.inf, o.kind, err, false)
	return obj, err
}

func (o *observedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := o.lw.WatchWithContext(withCluster(ctx, o.c.cluster), opts)
	o.c.observe(o.inf, o.kind, err, true)
	return w, err
}

// clusterKey is the context key of the cluster an informer request is for.
type clusterKey struct{}

func withCluster(ctx context.Context, cd types.NamespacedName) context.Context {
	return context.WithValue(ctx, clusterKey{}, cd)
}

// RequestCluster returns the ClusterDeployment whose cache made a list or
// watch request, from the request's context (http.Request.Context() in a
// transport of the child's REST config): request logs and tests attribute
// the informer traffic a child API server sees to its cluster with it.
func RequestCluster(ctx context.Context) (types.NamespacedName, bool) {
	cd, ok := ctx.Value(clusterKey{}).(types.NamespacedName)
	return cd, ok
}
