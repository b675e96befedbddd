package childcluster

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/apiaryhq/apiary/internal/kubeconfig"
)

// marker creates a namespace that exists only in one child, to tell them apart.
func marker(t *testing.T, i int) string {
	t.Helper()
	return children[i].NewNamespace(t, "child")
}

func TestClientIsCachedAndRebuiltWhenTheSecretChanges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{})
	cd := newCluster(t)
	first, second := marker(t, 0), marker(t, 1)
	writeKubeconfig(t, cd, kubeconfigs[0])

	c1, err := m.Client(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c1.Get(ctx, types.NamespacedName{Name: first}, &corev1.Namespace{})).To(Succeed())
	again, err := m.Client(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(c1), "an unchanged Secret reuses the client")

	writeKubeconfig(t, cd, kubeconfigs[1])
	c2, err := m.Client(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c2).NotTo(BeIdenticalTo(c1), "a changed Secret rebuilds the client")
	g.Expect(c2.Get(ctx, types.NamespacedName{Name: second}, &corev1.Namespace{})).To(Succeed())

	err = c2.Get(ctx, types.NamespacedName{Name: first}, &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "API errors stay recognisable: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(cd.String()))
}

func TestClientWithoutKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{})
	cd := newCluster(t)

	_, err := m.Client(ctx, cd)
	g.Expect(err).To(MatchError(ErrKubeconfigNotFound))
	g.Expect(err.Error()).To(ContainSubstring(cd.String()))
	_, err = m.Watch(ctx, cd, "colony/x/y")
	g.Expect(err).To(MatchError(ErrKubeconfigNotFound))

	writeKubeconfig(t, cd, nil) // the Secret exists without the key
	_, err = m.Client(ctx, cd)
	g.Expect(err).To(MatchError(ErrKubeconfigNotFound))
	g.Expect(err.Error()).To(ContainSubstring(`"value"`))
}

func TestClientRefusesUnsafeKubeconfigWithoutLeakingIt(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, Options{})
	for name, mutate := range map[string]func(*clientcmdapi.AuthInfo){
		"token file": func(a *clientcmdapi.AuthInfo) {
			a.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		},
		"client key file": func(a *clientcmdapi.AuthInfo) { a.ClientKey, a.ClientKeyData = "/etc/key.pem", nil },
		"exec plugin": func(a *clientcmdapi.AuthInfo) {
			a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := clientcmd.Load(kubeconfigs[0])
			g.Expect(err).NotTo(HaveOccurred())
			for _, a := range cfg.AuthInfos {
				mutate(a)
			}
			data, err := clientcmd.Write(*cfg)
			g.Expect(err).NotTo(HaveOccurred())
			cd := newCluster(t)
			writeKubeconfig(t, cd, data)
			_, err = m.Client(ctx, cd)
			g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
			g.Expect(err.Error()).To(ContainSubstring(cd.String()))
			_, err = m.Watch(ctx, cd, "colony/ns/name")
			g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
		})
	}

	g := NewWithT(t)
	cd := newCluster(t)
	token := "sEcReTtOkEn-0123456789abcdef"
	writeKubeconfig(t, cd, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: "+token+"\n   bad: [indent"))
	_, err := m.Client(ctx, cd)
	g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
	g.Expect(err.Error()).NotTo(ContainSubstring(token))
}

// blackhole returns the address of a listener that accepts connections but
// never answers, like a firewalled API server.
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "https://" + l.Addr().String()
}

func TestUnreachableChildGivesAnErrorInsteadOfHanging(t *testing.T) {
	for name, server := range map[string]string{
		"connection refused": "https://127.0.0.1:1",
		"no answer":          blackhole(t),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// A generous bound: the calls must return, not be fast.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m := newManager(t, Options{Timeout: 2 * time.Second, SyncTimeout: 3 * time.Second})
			cd := newCluster(t)
			writeKubeconfig(t, cd, withServer(t, kubeconfigs[0], server))

			c, err := m.Client(ctx, cd)
			g.Expect(err).NotTo(HaveOccurred())
			err = c.List(ctx, &corev1.NodeList{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsUnreachable(err)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError(ErrUnreachable))
			g.Expect(err.Error()).To(ContainSubstring(cd.String()))

			_, err = m.Watch(ctx, cd, "colony/ns/name")
			g.Expect(err).To(HaveOccurred())
			g.Expect(IsUnreachable(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(cd.String()))
			g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the call returned because of its own bounds")
			g.Expect(m.Owners(cd)).To(BeEmpty(), "a failed Watch registers no owner")
			g.Expect(m.States()).To(ConsistOf(ClusterState{Cluster: cd, Unreachable: true}), "for the unreachable-cluster metric")
			m.Forget(cd)
			g.Expect(m.States()).To(BeEmpty())
		})
	}
}

func TestErrorsNeverContainTheKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := newManager(t, Options{Timeout: 2 * time.Second, SyncTimeout: 3 * time.Second})
	cd := newCluster(t)
	kubeconfig := withServer(t, kubeconfigs[0], "https://127.0.0.1:1")
	writeKubeconfig(t, cd, kubeconfig)
	c, err := m.Client(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	errs := []error{c.List(ctx, &corev1.NodeList{})}
	_, err = m.Watch(ctx, cd, "colony/ns/name")
	errs = append(errs, err)
	cfg, err := clientcmd.Load(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		for _, secret := range [][]byte{a.ClientKeyData, a.ClientCertificateData, []byte(a.Token)} {
			for _, err := range errs {
				if len(secret) > 0 {
					g.Expect(strings.Contains(err.Error(), string(secret))).To(BeFalse())
				}
			}
		}
	}
}

func TestRESTConfigIsCheckedLikeTheClient(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{Timeout: 3 * time.Second, QPS: 7, Burst: 9})
	cd := newCluster(t)
	only := marker(t, 0)

	_, err := m.RESTConfig(ctx, cd)
	g.Expect(err).To(MatchError(ErrKubeconfigNotFound))

	writeKubeconfig(t, cd, kubeconfigs[0])
	cfg, err := m.RESTConfig(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Timeout).To(Equal(3 * time.Second))
	g.Expect(cfg.QPS).To(Equal(float32(7)))
	g.Expect(cfg.Burst).To(Equal(9))
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Namespaces().Get(ctx, only, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the config reaches the child the Secret names")

	cfg.Host = "https://example.invalid"
	again, err := m.RESTConfig(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Host).NotTo(Equal(cfg.Host), "each call returns a new config")

	token := "sEcReTtOkEn-0123456789abcdef"
	writeKubeconfig(t, cd, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: "+token+"\n   bad: [indent"))
	_, err = m.RESTConfig(ctx, cd)
	g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
	g.Expect(err.Error()).NotTo(ContainSubstring(token))

	policed := newManager(t, Options{ServerPolicy: kubeconfig.ServerPolicy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	writeKubeconfig(t, cd, kubeconfigs[0]) // https://127.0.0.1:<port>
	_, err = policed.RESTConfig(ctx, cd)
	g.Expect(err).To(MatchError(kubeconfig.ErrServerNotAllowed))

	m.Stop()
	_, err = m.RESTConfig(ctx, cd)
	g.Expect(err).To(MatchError(ErrManagerStopped))
}
