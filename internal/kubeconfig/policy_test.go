package kubeconfig

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

func TestParseServerPolicy(t *testing.T) {
	g := NewWithT(t)
	p, err := ParseServerPolicy(true, []string{" 10.0.0.0/8", "192.168.1.7", "::1", "::ffff:172.16.0.1", "10.1.2.3/16",
		"API.Example.com", "*.child.example", ""})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(ServerPolicy{HTTPSOnly: true,
		AllowedHosts: []string{"api.example.com", "*.child.example"},
		AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
			netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("172.16.0.1/32"), netip.MustParsePrefix("10.1.0.0/16")}}))

	for _, bad := range []string{"https://api.example.com", "api.example.com:6443", "10.0.0.0/33", "*", "*.", "a*.example.com",
		"fe80::1%eth0", "::ffff:10.0.0.0/104", "[::1]", "under_score.example", "a b"} {
		_, err := ParseServerPolicy(false, []string{bad})
		g.Expect(err).To(HaveOccurred(), "%q", bad)
	}
	p, err = ParseServerPolicy(false, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Restricted()).To(BeFalse())
}

func TestServerPolicyCheck(t *testing.T) {
	cidrs := ServerPolicy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	hosts := ServerPolicy{AllowedHosts: []string{"api.example.com", "*.child.example"}}
	both := ServerPolicy{AllowedHosts: hosts.AllowedHosts, AllowedCIDRs: cidrs.AllowedCIDRs}
	for _, tc := range []struct {
		policy  ServerPolicy
		server  string
		allowed bool
	}{
		{ServerPolicy{}, "http://anything.example", true},
		{ServerPolicy{HTTPSOnly: true}, "http://api.example.com", false},
		{ServerPolicy{HTTPSOnly: true}, "https://api.example.com", true},
		{cidrs, "https://10.1.2.3:6443", true},
		{cidrs, "https://[fd00::1]:6443", true},
		{cidrs, "https://[::ffff:10.0.0.1]", true},
		{cidrs, "https://192.168.0.1", false},
		{cidrs, "https://169.254.169.254", false},
		{cidrs, "https://api.example.com", false}, // names are not resolved: with CIDRs alone, literal IPs only
		{hosts, "https://api.example.com", true},
		{hosts, "https://API.EXAMPLE.COM.:6443", true},
		{hosts, "https://a.b.child.example", true},
		{hosts, "https://child.example", false},
		{hosts, "https://evilchild.example", false},
		{hosts, "https://api.example.com.evil", false},
		{hosts, "https://10.1.2.3", false}, // a literal IP needs a CIDR
		{hosts, "https://127.0.0.1", false},
		{both, "https://api.example.com", true},
		{both, "https://10.9.9.9", true},
		{both, "https://192.168.0.1", false},
	} {
		u, err := ServerURL(tc.server)
		if err != nil {
			t.Fatalf("%s: %v", tc.server, err)
		}
		err = tc.policy.Check(u)
		if tc.allowed && err != nil || !tc.allowed && err == nil {
			t.Errorf("%+v: %s: allowed %v, got %v", tc.policy, tc.server, tc.allowed, err)
		}
		if err != nil && !errors.Is(err, ErrServerNotAllowed) {
			t.Errorf("%s: %v does not wrap ErrServerNotAllowed", tc.server, err)
		}
	}
}

func TestRESTConfigAppliesThePolicy(t *testing.T) {
	g := NewWithT(t)
	strict := Options{Policy: ServerPolicy{HTTPSOnly: true, AllowedHosts: []string{"child.example"}}}
	_, err := RESTConfig([]byte(doc(`server: "http://child.example"`, "token: abc")), strict)
	g.Expect(err).To(And(MatchError(ErrInvalid), MatchError(ErrServerNotAllowed)))
	_, err = RESTConfig([]byte(doc(server("https://other.example"), "token: abc")), strict)
	g.Expect(err).To(MatchError(ErrServerNotAllowed))
	cfg, err := RESTConfig([]byte(doc(okCluster, "token: abc")), strict)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Dial).To(BeNil(), "no dialer without CIDRs")

	withCIDRs := Options{Policy: ServerPolicy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	cfg, err = RESTConfig([]byte(doc(server("https://10.0.0.1"), "token: abc")), withCIDRs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Dial).NotTo(BeNil())
}

// TestDialerRefusesAddressesOutsideTheCIDRs stands for DNS rebinding: the
// name localhost is allowed, but what it resolves to (loopback) is outside
// the allowed networks, so no connection reaches the listener.
func TestDialerRefusesAddressesOutsideTheCIDRs(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.0"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	port := mustURL(t, srv.URL).Port()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := doc(`server: "https://localhost:`+port+`", tls-server-name: example.com, certificate-authority-data: `+b64(ca), "token: abc")

	get := func(policy ServerPolicy) error {
		cfg, err := RESTConfig([]byte(kubeconfig), Options{Policy: policy})
		if err != nil {
			return err
		}
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return err
		}
		client.Timeout = 5 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		return nil
	}

	g := NewWithT(t)
	err := get(ServerPolicy{AllowedHosts: []string{"localhost"}, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	g.Expect(err).To(MatchError(ErrServerNotAllowed))
	g.Expect(err.Error()).To(ContainSubstring("outside the allowed networks"))
	g.Expect(conns.Load()).To(BeZero(), "no connection reached the listener")

	g.Expect(get(ServerPolicy{AllowedHosts: []string{"localhost"},
		AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})).To(Succeed())
	g.Expect(conns.Load()).To(BeNumerically(">", 0), "the allowed address was reached: the listener works")
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
