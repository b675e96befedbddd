package childcluster

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apiaryhq/apiary/internal/kubeconfig"
)

// parseWithin runs RESTConfigFromKubeconfig and fails the test when it does
// not return within a second, as when it opened a FIFO nobody writes to.
func parseWithin(t *testing.T, kubeconfig string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := RESTConfigFromKubeconfig([]byte(kubeconfig))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		t.Fatal("the kubeconfig was not refused within 1s: a file it names was opened")
		return nil
	}
}

// TestKubeconfigFileReferencesAreNeverOpened: a tenant-written kubeconfig
// naming a FIFO is refused at once (opening the FIFO would block the worker),
// and naming a file that exists or not gives the same error.
func TestKubeconfigFileReferencesAreNeverOpened(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	existing := filepath.Join(dir, "exists")
	if err := os.WriteFile(existing, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for field, kubeconfig := range map[string]func(path string) string{
		"tokenFile":          func(p string) string { return kc("tokenFile: " + p) },
		"client-certificate": func(p string) string { return kc("client-certificate: " + p + ", client-key-data: a2V5") },
		"client-key":         func(p string) string { return kc("client-key: " + p + ", client-certificate-data: Y2VydA==") },
		"certificate-authority": func(p string) string {
			return strings.Replace(kc("token: abc"), `server: "https://child.example:6443"`,
				`server: "https://child.example:6443", certificate-authority: `+p, 1)
		},
	} {
		t.Run(field, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(parseWithin(t, kubeconfig(fifo))).To(MatchError(ErrInvalidKubeconfig))
			errMissing := parseWithin(t, kubeconfig(missing))
			errExisting := parseWithin(t, kubeconfig(existing))
			g.Expect(errMissing).To(MatchError(ErrInvalidKubeconfig))
			g.Expect(errExisting).To(HaveOccurred())
			g.Expect(errExisting.Error()).To(Equal(errMissing.Error()), "whether a file exists must not show")
		})
	}
}

// TestKubeconfigDecodeErrorsDoNotEchoKeys: two users of one name make the
// decoder print the whole list, client keys included (as decimal bytes).
func TestKubeconfigDecodeErrorsDoNotEchoKeys(t *testing.T) {
	g := NewWithT(t)
	err := parseWithin(t, `apiVersion: v1
kind: Config
users:
- {name: u, user: {client-key-data: c2VjcmV0LWtleQ==, token: s3cr3t}}
- {name: u, user: {token: other}}
`)
	g.Expect(err).To(MatchError(ErrInvalidKubeconfig))
	g.Expect(err.Error()).NotTo(ContainSubstring("115 101 99"), "the key's bytes (\"sec\") leaked")
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
}

// hostileChild is a TLS server standing for a child API server its tenant
// controls: every request gets a 500 with a large HTML body holding a token.
func hostileChild(t *testing.T) (server string, ca []byte, body string) {
	t.Helper()
	body = "<html><pre>Authorization: Bearer " + strings.Repeat("eyJzZWNyZXQ", 4) + "</pre>" + strings.Repeat("tenant text ", 8000) + "</html>"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), body
}

// TestChildResponseBodiesNeverReachErrors: what a child answers is its
// tenant's text, so errors of child clients are bounded and hold no body.
func TestChildResponseBodiesNeverReachErrors(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server, ca, body := hostileChild(t)
	m := newManager(t, Options{Timeout: 5 * time.Second, SyncTimeout: 5 * time.Second})
	cd := newCluster(t)
	cfg, err := clientcmd.Load(withServer(t, kubeconfigs[0], server))
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = ca
	}
	kubeconfig, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	writeKubeconfig(t, cd, kubeconfig)

	c, err := m.Client(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	getErr := c.Get(ctx, types.NamespacedName{Name: "default"}, &corev1.Namespace{})
	g.Expect(getErr).To(HaveOccurred())
	g.Expect(apierrors.IsInternalError(getErr)).To(BeTrue(), "the answer stays recognisable: %v", getErr)
	_, watchErr := m.Watch(ctx, cd, "colony/ns/name")
	g.Expect(watchErr).To(HaveOccurred())
	for _, err := range []error{getErr, watchErr} {
		g.Expect(err.Error()).To(ContainSubstring(cd.String()))
		g.Expect(err.Error()).NotTo(ContainSubstring("tenant text"))
		g.Expect(err.Error()).NotTo(ContainSubstring("eyJzZWNyZXQ"))
		g.Expect(len(err.Error())).To(BeNumerically("<", 2*MaxErrorText), "%d bytes", len(err.Error()))
	}
	g.Expect(len(body)).To(BeNumerically(">", 64<<10))
}

// TestManagerAppliesTheServerPolicy: a kubeconfig naming a server outside
// the policy is refused, also through a custom NewRESTConfig, and a name the
// policy allows cannot connect to an address outside its CIDRs.
func TestManagerAppliesTheServerPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tenNet := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

	t.Run("literal IP outside the CIDRs", func(t *testing.T) {
		for name, newRESTConfig := range map[string]func([]byte) (*rest.Config, error){
			"default parser": nil,
			"custom parser":  RESTConfigFromKubeconfig,
		} {
			g := NewWithT(t)
			m := newManager(t, Options{ServerPolicy: kubeconfig.ServerPolicy{AllowedCIDRs: tenNet}, NewRESTConfig: newRESTConfig})
			cd := newCluster(t)
			writeKubeconfig(t, cd, kubeconfigs[0]) // https://127.0.0.1:<port>
			_, err := m.Client(ctx, cd)
			g.Expect(err).To(And(MatchError(ErrInvalidKubeconfig), MatchError(kubeconfig.ErrServerNotAllowed)), name)
			_, err = m.Watch(ctx, cd, "colony/ns/name")
			g.Expect(err).To(MatchError(kubeconfig.ErrServerNotAllowed), name)
		}
	})

	t.Run("plain http", func(t *testing.T) {
		g := NewWithT(t)
		m := newManager(t, Options{ServerPolicy: kubeconfig.ServerPolicy{HTTPSOnly: true}})
		cd := newCluster(t)
		writeKubeconfig(t, cd, withServer(t, kubeconfigs[0], "http://127.0.0.1:1"))
		_, err := m.Client(ctx, cd)
		g.Expect(err).To(MatchError(kubeconfig.ErrServerNotAllowed))
	})

	t.Run("allowed name resolving outside the CIDRs", func(t *testing.T) {
		g := NewWithT(t)
		u, err := url.Parse(children[0].Config.Host)
		g.Expect(err).NotTo(HaveOccurred())
		cd := newCluster(t)
		writeKubeconfig(t, cd, withServer(t, kubeconfigs[0], "https://localhost:"+u.Port()))

		m := newManager(t, Options{Timeout: 5 * time.Second,
			ServerPolicy: kubeconfig.ServerPolicy{AllowedHosts: []string{"localhost"}, AllowedCIDRs: tenNet}})
		c, err := m.Client(ctx, cd)
		g.Expect(err).NotTo(HaveOccurred(), "the name is allowed; names are not resolved when checked")
		err = c.List(ctx, &corev1.NodeList{})
		g.Expect(err).To(MatchError(kubeconfig.ErrServerNotAllowed))
		g.Expect(err.Error()).To(ContainSubstring("outside the allowed networks"))

		allowed := newManager(t, Options{Timeout: 5 * time.Second,
			ServerPolicy: kubeconfig.ServerPolicy{AllowedHosts: []string{"localhost"}, AllowedCIDRs: loopback}})
		c, err = allowed.Client(ctx, cd)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.List(ctx, &corev1.NodeList{})).To(Succeed(), "the same server is reached when its address is allowed")
	})
}
