package kubeconfig

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRESTConfigRefuses(t *testing.T) {
	unusedUser := func(user string) string {
		return strings.Replace(doc(okCluster, "token: abc"), "users: [", "users: [{name: other, user: {"+user+"}}, ", 1)
	}
	unusedCluster := func(cluster string) string {
		return strings.Replace(doc(okCluster, "token: abc"), "clusters: [", "clusters: [{name: other, cluster: {"+cluster+"}}, ", 1)
	}
	for name, tc := range map[string]struct {
		kubeconfig string
		want       string // a substring of the error
	}{
		"too large":                    {kubeconfig: doc(okCluster, "token: "+strings.Repeat("a", MaxSize)), want: "more than"},
		"empty":                        {kubeconfig: "", want: "empty"},
		"blank":                        {kubeconfig: " \n\t", want: "empty"},
		"not YAML":                     {kubeconfig: "{", want: "malformed"},
		"a list":                       {kubeconfig: "[1, 2]", want: "cannot decode"},
		"token file":                   {kubeconfig: doc(okCluster, "tokenFile: /var/run/secrets/token"), want: "tokenFile: references to local files"},
		"client certificate file":      {kubeconfig: doc(okCluster, "client-certificate: /c, client-key-data: "+b64(testKey)), want: "client-certificate: references"},
		"client key file":              {kubeconfig: doc(okCluster, "client-key: /k, client-certificate-data: "+b64(testCert)), want: "client-key: references"},
		"certificate authority file":   {kubeconfig: doc(`server: "https://child.example", certificate-authority: /ca`, "token: abc"), want: "certificate-authority: references"},
		"token file of an unused user": {kubeconfig: unusedUser("tokenFile: /t"), want: `user "other": tokenFile`},
		"CA file of an unused cluster": {kubeconfig: unusedCluster(`server: "https://o.example", certificate-authority: /ca`), want: `cluster "other": certificate-authority`},
		"exec": {kubeconfig: doc(okCluster, "exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, interactiveMode: Never}"),
			want: "exec credential plugins"},
		"auth provider":           {kubeconfig: doc(okCluster, "auth-provider: {name: oidc}"), want: "auth providers"},
		"proxy":                   {kubeconfig: doc(okCluster+`, proxy-url: "http://proxy:3128"`, "token: abc"), want: "proxy-url"},
		"socks proxy":             {kubeconfig: doc(okCluster+`, proxy-url: "socks5://proxy:1080"`, "token: abc"), want: "proxy-url"},
		"impersonation":           {kubeconfig: doc(okCluster, "token: abc, as: system:admin"), want: "impersonation"},
		"impersonate groups":      {kubeconfig: doc(okCluster, "token: abc, as-groups: [system:masters]"), want: "impersonation"},
		"impersonate UID":         {kubeconfig: doc(okCluster, "token: abc, as-uid: u1"), want: "impersonation"},
		"impersonate extra":       {kubeconfig: doc(okCluster, "token: abc, as-user-extra: {scopes: [a]}"), want: "impersonation"},
		"insecure":                {kubeconfig: doc(`server: "https://child.example", insecure-skip-tls-verify: true`, "token: abc"), want: "insecure-skip-tls-verify"},
		"token and password":      {kubeconfig: doc(okCluster, "token: abc, username: a, password: b"), want: "both a token"},
		"newline in token":        {kubeconfig: doc(okCluster, `token: "abc\ndef"`), want: "control characters"},
		"certificate without key": {kubeconfig: doc(okCluster, "client-certificate-data: "+b64(testCert)), want: "needs its key"},
		"mismatched key pair": {kubeconfig: doc(okCluster, "client-certificate-data: "+b64(testCert)+", client-key-data: "+b64([]byte("junk"))),
			want: "not a key pair"},
		"CA data not PEM":           {kubeconfig: doc(`server: "https://child.example", certificate-authority-data: `+b64([]byte("junk")), "token: abc"), want: "no PEM certificate"},
		"no current context":        {kubeconfig: strings.Replace(doc(okCluster, "token: abc"), "current-context: x\n", "", 1), want: "no current-context"},
		"dangling current context":  {kubeconfig: strings.Replace(doc(okCluster, "token: abc"), "current-context: x", "current-context: z", 1), want: `current-context "z" does not exist`},
		"context without a cluster": {kubeconfig: strings.Replace(doc(okCluster, "token: abc"), "cluster: c, user: u", "cluster: d, user: u", 1), want: `cluster "d" does not exist`},
		"context without its user":  {kubeconfig: strings.Replace(doc(okCluster, "token: abc"), "cluster: c, user: u", "cluster: c, user: v", 1), want: `user "v" does not exist`},
		"duplicate users":           {kubeconfig: strings.Replace(doc(okCluster, "token: abc"), "users: [", "users: [{name: u, user: {token: s3cr3t}}, ", 1), want: "two entries of one name in AuthInfos"},
		"no server":                 {kubeconfig: doc("", "token: abc"), want: "no server"},
		"host and port only":        {kubeconfig: doc(server("child.example:6443"), "token: abc"), want: "scheme"},
		"unix socket":               {kubeconfig: doc(server("unix:///var/run/docker.sock"), "token: abc"), want: "scheme"},
		"ftp":                       {kubeconfig: doc(server("ftp://child.example"), "token: abc"), want: "scheme"},
		"http without a host":       {kubeconfig: doc(server("http://"), "token: abc"), want: "no host"},
		"https with only a port":    {kubeconfig: doc(server("https://:6443"), "token: abc"), want: "no host"},
		"relative":                  {kubeconfig: doc(server("/api"), "token: abc"), want: "scheme"},
		"credentials in the URL":    {kubeconfig: doc(server("https://admin:secret@child.example"), "token: abc"), want: "credentials"},
		"query":                     {kubeconfig: doc(server("https://child.example/?x=1"), "token: abc"), want: "query"},
		"fragment":                  {kubeconfig: doc(server("https://child.example/#x"), "token: abc"), want: "fragment"},
		"port out of range":         {kubeconfig: doc(server("https://child.example:99999"), "token: abc"), want: "port"},
		"space in the server":       {kubeconfig: doc(server("https://child.example /x"), "token: abc"), want: "spaces"},
		"unclosed IPv6":             {kubeconfig: doc(server("https://[::1"), "token: abc"), want: "not a URL"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := RESTConfig([]byte(tc.kubeconfig), Options{})
			g.Expect(err).To(MatchError(ErrInvalid))
			g.Expect(cfg).To(BeNil())
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(len(err.Error())).To(BeNumerically("<", 300), "errors are short")
			for _, secret := range []string{"s3cr3t", "/var/run", "/bin/sh", "proxy:", "admin:secret", b64(testKey)[:16]} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret), "errors quote no value")
			}
		})
	}
}

func TestRESTConfigBuildsFromInlineData(t *testing.T) {
	for name, tc := range map[string]struct {
		kubeconfig string
		opts       Options
		check      func(g Gomega, host string, token, user string, ca, cert, key []byte, insecure bool)
	}{
		"token": {kubeconfig: doc(okCluster, "token: abc"), check: func(g Gomega, host, token, _ string, ca, _, _ []byte, _ bool) {
			g.Expect(host).To(Equal("https://child.example:6443"))
			g.Expect(token).To(Equal("abc"))
			g.Expect(ca).To(Equal(testCert))
		}},
		"client certificate": {kubeconfig: doc(okCluster, "client-certificate-data: "+b64(testCert)+", client-key-data: "+b64(testKey)),
			check: func(g Gomega, _, _, _ string, _, cert, key []byte, _ bool) {
				g.Expect(cert).To(Equal(testCert))
				g.Expect(key).To(Equal(testKey))
			}},
		"basic auth": {kubeconfig: doc(okCluster, "username: admin, password: p w"), check: func(g Gomega, _, _, user string, _, _, _ []byte, _ bool) {
			g.Expect(user).To(Equal("admin"))
		}},
		"anonymous": {kubeconfig: strings.Replace(doc(okCluster, ""), "cluster: c, user: u", "cluster: c", 1),
			check: func(g Gomega, _, token, user string, _, _, _ []byte, _ bool) { g.Expect(token + user).To(BeEmpty()) }},
		"IPv6 literal with a path": {kubeconfig: doc(server("https://[::1]:6443/k8s/clusters/c-1"), ""),
			check: func(g Gomega, host, _, _ string, _, _, _ []byte, _ bool) {
				g.Expect(host).To(Equal("https://[::1]:6443/k8s/clusters/c-1"))
			}},
		"plain http without a policy": {kubeconfig: doc(`server: "http://child.example"`, "token: abc"),
			check: func(g Gomega, host, _, _ string, _, _, _ []byte, _ bool) {
				g.Expect(host).To(Equal("http://child.example"))
			}},
		"insecure when allowed": {kubeconfig: doc(`server: "https://child.example", insecure-skip-tls-verify: true`, "token: abc"),
			opts:  Options{AllowInsecureSkipTLSVerify: true},
			check: func(g Gomega, _, _, _ string, _, _, _ []byte, insecure bool) { g.Expect(insecure).To(BeTrue()) }},
		"several contexts, the current one": {kubeconfig: strings.Replace(doc(okCluster, "token: abc"),
			"contexts: [", "contexts: [{name: a, context: {cluster: c}}, ", 1),
			check: func(g Gomega, _, token, _ string, _, _, _ []byte, _ bool) { g.Expect(token).To(Equal("abc")) }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := RESTConfig([]byte(tc.kubeconfig), tc.opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.BearerTokenFile + cfg.CertFile + cfg.KeyFile + cfg.CAFile).To(BeEmpty())
			g.Expect(cfg.ExecProvider).To(BeNil())
			g.Expect(cfg.AuthProvider).To(BeNil())
			g.Expect(cfg.Proxy).To(BeNil())
			g.Expect(cfg.Impersonate.UserName).To(BeEmpty())
			tc.check(g, cfg.Host, cfg.BearerToken, cfg.Username, cfg.CAData, cfg.CertData, cfg.KeyData, cfg.Insecure)
		})
	}
}

// TestFileReferencesGiveOneError: whether a named file exists must not show.
func TestFileReferencesGiveOneError(t *testing.T) {
	g := NewWithT(t)
	_, errMissing := RESTConfig([]byte(doc(okCluster, "tokenFile: /nonexistent/token")), Options{})
	_, errExisting := RESTConfig([]byte(doc(okCluster, "tokenFile: /etc/hostname")), Options{})
	g.Expect(errMissing).To(MatchError(ErrInvalid))
	g.Expect(errExisting).To(MatchError(ErrInvalid))
	g.Expect(errExisting.Error()).To(Equal(errMissing.Error()))
	g.Expect(errors.Is(errMissing, ErrServerNotAllowed)).To(BeFalse())
}
