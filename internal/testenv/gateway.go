package testenv

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayClient returns a client of a regional control plane that knows
// the Gateway API's types.
func GatewayClient(cfg *rest.Config) (client.Client, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := gatewayv1.Install(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// StartGatewayPlane starts a bare control plane that serves the Gateway
// API's CRDs, as a regional cluster (or a child with waypoints) does, and
// returns it with a client that knows the Gateway API's types. Stop it
// when done; on error nothing is left running.
func StartGatewayPlane() (*Environment, client.Client, error) {
	crds, err := GatewayAPICRDs()
	if err != nil {
		return nil, nil, fmt.Errorf("finding the Gateway API CRDs: %w", err)
	}
	env, err := Start(Bare(), WithCRDDirs(crds...))
	if err != nil {
		return nil, nil, fmt.Errorf("starting a control plane with the Gateway API: %w", err)
	}
	c, err := GatewayClient(env.Config)
	if err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("a Gateway API client: %w", err)
	}
	return env, c, nil
}

// TenantGateway is the tenant Gateway of a regional cluster in tests: a
// wildcard HTTPS listener for Domain and one TCP listener per pool port.
type TenantGateway struct {
	Key    types.NamespacedName
	Domain string
	// Pool maps listener names to ports.
	Pool map[string]int32
}

// Create creates the Gateway (and its namespace) and reports it
// Programmed, as the gateway controller would.
func (tg TenantGateway) Create(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tg.Key.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", tg.Key.Namespace, err)
	}
	listeners := []gatewayv1.Listener{{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
		Hostname: ptr.To(gatewayv1.Hostname("*." + tg.Domain)),
		TLS:      &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard"}}}}}
	for name, port := range tg.Pool {
		listeners = append(listeners, gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.TCPProtocolType, Port: port})
	}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: tg.Key.Namespace, Name: tg.Key.Name},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: listeners},
	}
	if err := c.Create(ctx, gw); err != nil {
		return fmt.Errorf("creating Gateway %s: %w", tg.Key, err)
	}
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed",
		Message: "by the test", LastTransitionTime: metav1.Now(), ObservedGeneration: gw.Generation}}
	if err := c.Status().Update(ctx, gw); err != nil {
		return fmt.Errorf("programming Gateway %s: %w", tg.Key, err)
	}
	return nil
}

// AcceptRoutes plays the gateway controller for the HTTPRoutes and
// TCPRoutes of namespace ns: Accepted and ResolvedRefs on their parent,
// the Gateway gw.
func AcceptRoutes(ctx context.Context, c client.Client, gw types.NamespacedName, ns string) error {
	parent := func(section *gatewayv1.SectionName) gatewayv1.RouteParentStatus {
		now := metav1.Now()
		return gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw.Name), Namespace: ptr.To(gatewayv1.Namespace(gw.Namespace)), SectionName: section},
			ControllerName: "example.com/test-gateway",
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok", LastTransitionTime: now},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", Message: "ok", LastTransitionTime: now},
			},
		}
	}
	https := &gatewayv1.HTTPRouteList{}
	if err := c.List(ctx, https, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range https.Items {
		r := &https.Items[i]
		r.Status.Parents = []gatewayv1.RouteParentStatus{parent(nil)}
		if err := c.Status().Update(ctx, r); err != nil {
			return err
		}
	}
	tcps := &gatewayv1.TCPRouteList{}
	if err := c.List(ctx, tcps, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range tcps.Items {
		r := &tcps.Items[i]
		r.Status.Parents = []gatewayv1.RouteParentStatus{parent(r.Spec.ParentRefs[0].SectionName)}
		if err := c.Status().Update(ctx, r); err != nil {
			return err
		}
	}
	return nil
}
