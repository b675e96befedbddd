package childcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// cacheScheme holds the kinds a cluster cache keeps: Nodes, Pods, Gateways.
var cacheScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}()

// Gateway returns a Gateway of the cluster (trimmed by TrimGateway) from the
// cache. A Gateway that does not exist gives a NotFound error (apierrors);
// a cluster that does not serve Gateways gives ErrGatewayAPINotServed; an
// owner must have watched with Gateways, else ErrGatewaysNotWatched.
func (c *ClusterCache) Gateway(ctx context.Context, key types.NamespacedName) (*gatewayv1.Gateway, error) {
	c.mu.Lock()
	stopped, inf, ca := c.stopped, c.gateways, c.cache
	c.mu.Unlock()
	switch {
	case stopped:
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, ErrCacheStopped)
	case inf == nil:
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, ErrGatewaysNotWatched)
	}
	c.errMu.Lock()
	err := c.errs[GatewayKind]
	c.errMu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		// Listing answers 404 until the CRD is installed, and again once
		// it is removed; the cached Gateways are stale then.
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, ErrGatewayAPINotServed)
	case !inf.HasSynced() && err != nil:
		return nil, clusterErr(c.cluster, "watching Gateways", err)
	case !inf.HasSynced():
		return nil, fmt.Errorf("cluster %s: the Gateways are not synced yet", c.cluster)
	}
	gw := &gatewayv1.Gateway{}
	if err := ca.Get(ctx, key, gw); err != nil {
		return nil, err
	}
	return gw, nil
}

// ensureGateways starts the Gateway informer unless it runs, and waits
// (bounded by ctx and SyncTimeout) until it synced or failed. A cluster
// that cannot be reached is an error (the informer stops again); other
// failures are not returned: they stay recorded for Gateway to report,
// while the informer keeps listing, so that a Gateway API installed later
// is seen.
func (c *ClusterCache) ensureGateways(ctx context.Context) error {
	inf, err := c.startInformer(&gatewayv1.Gateway{}, GatewayKind, &c.gateways)
	if err != nil {
		if errors.Is(err, ErrCacheStopped) {
			return err
		}
		c.setErr(GatewayKind, err)
		return nil
	}
	err = c.waitSynced(ctx, inf, GatewayKind)
	if IsUnreachable(err) || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || ctx.Err() != nil {
		c.stopInformer(&gatewayv1.Gateway{}, GatewayKind, &c.gateways, inf)
		return err
	}
	if !c.live.Swap(true) && err != nil {
		// The API server answered (the failure is recorded): from now on
		// changes are announced, this one too.
		c.m.notify(c.cluster, GatewayKind)
	}
	return nil
}

// stopGateways stops the Gateway informer.
func (c *ClusterCache) stopGateways() {
	c.stopInformer(&gatewayv1.Gateway{}, GatewayKind, &c.gateways, nil)
}

// TrimGateway returns the parts of a Gateway that workspace routes read:
// name, namespace, uid, resourceVersion, each listener's name, host name,
// port and protocol, and the conditions' type, status, reason and message
// (bounded by SafeText: it is the child's text).
// Listener statuses (whose attached-route counts change with every route),
// addresses and transition times are dropped, so that only a change that
// matters to routes notifies.
func TrimGateway(gw *gatewayv1.Gateway) *gatewayv1.Gateway {
	out := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{
			Name:            gw.Name,
			Namespace:       gw.Namespace,
			UID:             gw.UID,
			ResourceVersion: gw.ResourceVersion,
		},
	}
	for _, l := range gw.Spec.Listeners {
		out.Spec.Listeners = append(out.Spec.Listeners, gatewayv1.Listener{
			Name: l.Name, Hostname: l.Hostname, Port: l.Port, Protocol: l.Protocol,
		})
	}
	for _, cond := range gw.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{
			Type: cond.Type, Status: cond.Status, Reason: cond.Reason, Message: SafeText(cond.Message),
		})
	}
	return out
}
