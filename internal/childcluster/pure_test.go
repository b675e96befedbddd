package childcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestIsUnreachable(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	gr := schema.GroupResource{Resource: "nodes"}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                {nil, false},
		"refused":            {dial(syscall.ECONNREFUSED), true},
		"no route":           {dial(syscall.EHOSTUNREACH), true},
		"no such host":       {&url.Error{Op: "Get", Err: &net.DNSError{Err: "no such host", Name: "child.invalid", IsNotFound: true}}, true},
		"deadline":           {fmt.Errorf("listing: %w", context.DeadlineExceeded), true},
		"unexpected EOF":     {io.ErrUnexpectedEOF, true},
		"unknown CA":         {&url.Error{Op: "Get", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, true},
		"not TLS":            {tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		"flattened string":   {errors.New(`Get "https://x": net/http: TLS handshake timeout`), true},
		"ErrUnreachable":     {fmt.Errorf("cluster a/b: %w", ErrUnreachable), true},
		"503 from a proxy":   {apierrors.NewServiceUnavailable("upstream down"), true},
		"canceled":           {context.Canceled, false},
		"not found":          {apierrors.NewNotFound(gr, "n"), false},
		"forbidden":          {apierrors.NewForbidden(gr, "n", errors.New("rbac")), false},
		"kubeconfig missing": {ErrKubeconfigNotFound, false},
		"other":              {errors.New("boom"), false},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(IsUnreachable(tc.err)).To(Equal(tc.want))
		})
	}
}

func TestTrimNodeKeepsOnlyWhatTheGateReads(t *testing.T) {
	g := NewWithT(t)
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("7")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "m", LastHeartbeatTime: now, LastTransitionTime: now}},
			Images:      []corev1.ContainerImage{{Names: []string{"big"}}},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.35.0"},
		},
	}
	got := TrimNode(n)
	g.Expect(got).To(Equal(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.NodeSpec{Unschedulable: true, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{
			Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: now}},
		},
	}))
	g.Expect(TrimNode(got)).To(Equal(got), "trimming is idempotent")
}

func TestTrimPodKeepsOnlyWhatAccountingReads(t *testing.T) {
	g := NewWithT(t)
	always := corev1.ContainerRestartPolicyAlways
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}, OwnerReferences: []metav1.OwnerReference{{Name: "rs"}}},
		Spec: corev1.PodSpec{
			NodeName:       "n",
			Containers:     []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "K", Value: "V"}}, Resources: res}},
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "i", RestartPolicy: &always, Resources: res}},
			Volumes:        []corev1.Volume{{Name: "v"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "c"}}},
	}
	got := TrimPod(p)
	g.Expect(got).To(Equal(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			NodeName:       "n",
			Containers:     []corev1.Container{{Name: "c", Resources: res}},
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Resources: res}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}))
	g.Expect(TrimPod(got)).To(Equal(got), "trimming is idempotent")
}

func TestChangedIgnoresResourceVersionOnly(t *testing.T) {
	base := TrimNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"}})
	bumped := base.DeepCopy()
	bumped.ResourceVersion = "2"
	relabelled := bumped.DeepCopy()
	relabelled.Labels = map[string]string{"nvidia.com/gpu.product": "H100"}
	pod := TrimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}})
	running := pod.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	for name, tc := range map[string]struct {
		old, new any
		want     bool
	}{
		"resync":               {base, base, false},
		"only resourceVersion": {base, bumped, false},
		"labels":               {base, relabelled, true},
		"pod phase":            {pod, running, true},
		"other types":          {"a", "a", true},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(changed(tc.old, tc.new)).To(Equal(tc.want))
		})
	}
}

func TestNotificationsAreCoalesced(t *testing.T) {
	g := NewWithT(t)
	m := NewManager(nil, Options{})
	defer m.Stop()
	events := m.Subscribe()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	for range 1000 {
		m.notify(a, NodeKind) // never blocks, nobody reads yet
	}
	m.notify(b, PodKind)
	seen := map[types.NamespacedName]int{}
	for seen[b] == 0 {
		var e event.GenericEvent
		g.Eventually(events).Should(Receive(&e))
		seen[client.ObjectKeyFromObject(e.Object)]++
	}
	g.Expect(seen[a]).To(BeNumerically("<=", 2), "a burst gives at most the event in flight and one pending")
	g.Expect(seen[a]).To(BeNumerically(">=", 1))
}

func TestSubscriptionsFilterKinds(t *testing.T) {
	g := NewWithT(t)
	m := NewManager(nil, Options{})
	defer m.Stop()
	pods := m.Subscribe(PodKind)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	m.notify(a, NodeKind)
	m.notify(b, PodKind)
	g.Eventually(pods).Should(Receive(HaveField("Object.GetName()", "b")), "the node change of a was filtered out")
	m.notify(a, "") // reachability
	g.Eventually(pods).Should(Receive(HaveField("Object.GetName()", "a")))
}

func TestRESTConfigFromKubeconfig(t *testing.T) {
	for name, tc := range map[string]struct {
		kubeconfig string
		wantErr    bool
	}{
		"inline token":  {kubeconfig: kc("token: abc"), wantErr: false},
		"token file":    {kubeconfig: kc("tokenFile: /var/run/secrets/token"), wantErr: true},
		"exec":          {kubeconfig: kc("exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, interactiveMode: Never}"), wantErr: true},
		"auth provider": {kubeconfig: kc("auth-provider: {name: oidc}"), wantErr: true},
		"garbage":       {kubeconfig: "{", wantErr: true},
		"empty":         {kubeconfig: "", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := RESTConfigFromKubeconfig([]byte(tc.kubeconfig))
			if tc.wantErr {
				g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Host).To(Equal("https://child.example:6443"))
		})
	}
}

func kc(user string) string {
	return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://child.example:6443"}}]
users: [{name: u, user: {` + user + `}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
}

func FuzzRESTConfigFromKubeconfig(f *testing.F) {
	f.Add([]byte(kc("token: abc")))
	f.Add([]byte(kc("tokenFile: /t")))
	f.Add([]byte("{"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := RESTConfigFromKubeconfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidKubeconfig) {
				t.Fatalf("error does not wrap ErrInvalidKubeconfig: %v", err)
			}
			return
		}
		if cfg.Host == "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil ||
			cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" {
			t.Fatalf("unsafe config accepted: %+v", cfg)
		}
	})
}

func TestTrimGatewayKeepsWhatRoutesRead(t *testing.T) {
	g := NewWithT(t)
	host := gatewayv1.Hostname("*.t.example.com")
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "istio-system", UID: "u", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: []gatewayv1.Listener{{Name: "https", Hostname: &host,
			Port: 443, Protocol: gatewayv1.HTTPSProtocolType, TLS: &gatewayv1.ListenerTLSConfig{}}}},
		Status: gatewayv1.GatewayStatus{
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", Message: "m",
				ObservedGeneration: 3, LastTransitionTime: metav1.Now()}},
			Listeners: []gatewayv1.ListenerStatus{{Name: "https", AttachedRoutes: 4}},
		},
	}
	out := TrimGateway(gw)
	g.Expect(out).To(Equal(&gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "istio-system", UID: "u", ResourceVersion: "7"},
		Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{{Name: "https", Hostname: &host, Port: 443,
			Protocol: gatewayv1.HTTPSProtocolType}}},
		Status: gatewayv1.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue,
			Reason: "Programmed", Message: "m"}}},
	}))
	later := gw.DeepCopy()
	later.ResourceVersion, later.Status.Listeners[0].AttachedRoutes = "8", 5
	g.Expect(changed(out, TrimGateway(later))).To(BeFalse(), "attached routes are no change")
	later.Spec.Listeners[0].Port = 8443
	g.Expect(changed(out, TrimGateway(later))).To(BeTrue())
}
