package kubeconfig

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// fuzzPolicy is the policy whose every accepted config the fuzz target checks.
var fuzzPolicy = ServerPolicy{HTTPSOnly: true, AllowedHosts: []string{"child.example", "*.apiary.example"},
	AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}

// satisfiesFuzzPolicy restates fuzzPolicy independently of ServerPolicy.
func satisfiesFuzzPolicy(host string) bool {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "https" || u.User != nil {
		return false
	}
	name := u.Hostname()
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.WithZone("").Unmap()
		return netip.MustParsePrefix("10.0.0.0/8").Contains(ip) || netip.MustParsePrefix("fd00::/8").Contains(ip)
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	return name == "child.example" || strings.HasSuffix(name, ".apiary.example") && len(name) > len(".apiary.example")
}

// FuzzKubeconfig: RESTConfig never panics, never opens a file (seeds name a
// FIFO, which would block it, and /dev/zero, which would exhaust memory),
// returns ErrInvalid or a config built from inline data only, and accepts
// under a policy only servers that satisfy it.
func FuzzKubeconfig(f *testing.F) {
	fifo := newFIFO(f)
	user := func(u string) []byte { return []byte(doc(okCluster, u)) }
	cluster := func(c string) []byte { return []byte(doc(c, "token: abc")) }
	for _, seed := range [][]byte{
		user("token: abc"),
		user("client-certificate-data: " + b64(testCert) + ", client-key-data: " + b64(testKey)),
		user("username: admin, password: pw"),
		user("tokenFile: " + fifo),
		user("tokenFile: /dev/zero"),
		user("client-certificate: " + fifo + ", client-key: /dev/zero"),
		user("exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id], interactiveMode: Never}"),
		user("auth-provider: {name: oidc, config: {idp-issuer-url: 'https://issuer'}}"),
		user("as: system:admin, as-groups: [system:masters]"),
		user("token: " + strings.Repeat("x", 4<<10)),
		cluster(`server: "https://child.example", certificate-authority: ` + fifo),
		cluster(okCluster + `, proxy-url: "socks5://10.0.0.1:1080"`),
		cluster(`server: "https://10.0.0.1", insecure-skip-tls-verify: true`),
		cluster(server("https://10.1.2.3:6443")),
		cluster(server("https://[fd00::1]:6443")),
		cluster(server("https://a.apiary.example/k8s/c")),
		cluster(server("https://[::1]")),
		cluster(server("https://[::ffff:10.0.0.1]")),
		cluster(server("http://")),
		cluster(server("http://child.example")),
		cluster(server("unix:///var/run/docker.sock")),
		cluster(server("https://admin:pw@child.example")),
		cluster(server("https://169.254.169.254/latest")),
		cluster(server("https://127.1")),
		cluster(server("https://child.example.:6443")),
		cluster(server("//child.example")),
		cluster(`server: "https://` + strings.Repeat("a", 3<<10) + `.apiary.example"`),
		[]byte(strings.Replace(doc(okCluster, "token: abc"), "current-context: x\n", "", 1)),
		[]byte(strings.Replace(doc(okCluster, "token: abc"), "users: [", "users: [{name: u, user: {tokenFile: /etc/passwd}}, ", 1)),
		[]byte("{"),
		[]byte(""),
		[]byte("a: &a [*a, *a]\nb: [*a, *a, *a, *a]"),
		[]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://10.0.0.1"}}],` +
			`"contexts":[{"name":"x","context":{"cluster":"c"}}],"current-context":"x"}`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{{}, {Policy: fuzzPolicy}, {Policy: fuzzPolicy, AllowInsecureSkipTLSVerify: true}} {
			cfg, err := parseWithin(t, data, opts)
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error does not wrap ErrInvalid: %v", err)
				}
				if len(err.Error()) > 512 {
					t.Fatalf("error of %d bytes", len(err.Error()))
				}
				continue
			}
			if cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" ||
				cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Proxy != nil || cfg.Impersonate.UserName != "" ||
				len(cfg.Impersonate.Groups) > 0 || cfg.Impersonate.UID != "" {
				t.Fatalf("unsafe config accepted: %+v", cfg)
			}
			if _, err := ServerURL(cfg.Host); err != nil {
				t.Fatalf("server %q accepted: %v", cfg.Host, err)
			}
			if cfg.Insecure && !opts.AllowInsecureSkipTLSVerify {
				t.Fatalf("insecure config accepted")
			}
			if opts.Policy.Restricted() {
				if !satisfiesFuzzPolicy(cfg.Host) {
					t.Fatalf("server %q accepted outside the policy", cfg.Host)
				}
				if cfg.Dial == nil {
					t.Fatalf("no dialer despite allowed CIDRs")
				}
			}
		}
	})
}
