package manager

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestSecureMetricsNeedAnAuthorisedToken serves the metrics as the chart
// does (--metrics-secure): over HTTPS, refused without a token, refused to
// a ServiceAccount that may not get /metrics, served to one that may (the
// chart's metrics-reader ClusterRole).
func TestSecureMetricsNeedAnAuthorisedToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := freeAddress(t)
	mgr, _, err := New(Options{RestConfig: env.Config, MetricsBindAddress: addr, MetricsSecure: true,
		HealthProbeBindAddress: "0", Concurrency: DefaultConcurrency, Logger: zap.New(zap.WriteTo(io.Discard)),
		SkipControllerNameValidation: true, controllers: []controllerSetup{}})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(BeNil()))
	}()

	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	ns := env.NewNamespace(t, "metrics")
	token := func(name string) string {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	stranger, scraper := token("stranger"), token("prometheus")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "prometheus"}}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server's certificate is self-signed
	get := func(scheme, bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	g.Eventually(func() int { code, _ := get("https", scraper); return code }, 30*time.Second, 200*time.Millisecond).
		Should(Equal(http.StatusOK), "an authorised scraper reads the metrics")
	_, body := get("https", scraper)
	g.Expect(body).To(ContainSubstring("apiary_build_info"))
	code, _ := get("https", "")
	g.Expect(code).To(Equal(http.StatusUnauthorized), "no token")
	code, _ = get("https", "not-a-token")
	g.Expect(code).NotTo(Equal(http.StatusOK), "a token the API server does not accept")
	code, _ = get("https", stranger)
	g.Expect(code).To(Equal(http.StatusForbidden), "a subject that may not get /metrics")
	code, _ = get("http", "")
	g.Expect(code).NotTo(Equal(http.StatusOK), "no plain HTTP")
}
