package kubeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// checkAll refuses what no entry may ask for, in every cluster, user and
// context, used or not: a refused field is never read, whichever is current.
// Entries are checked in name order, so the error does not vary.
func checkAll(cfg *clientcmdapi.Config, opts Options) error {
	for _, name := range sortedKeys(cfg.Clusters) {
		if err := checkCluster(cfg.Clusters[name], opts); err != nil {
			return fmt.Errorf("%w: cluster %s: %s", ErrInvalid, quote(name), err)
		}
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		if err := checkUser(cfg.AuthInfos[name]); err != nil {
			return fmt.Errorf("%w: user %s: %s", ErrInvalid, quote(name), err)
		}
	}
	for _, name := range sortedKeys(cfg.Contexts) {
		if c := cfg.Contexts[name]; c != nil && c.LocationOfOrigin != "" {
			return fmt.Errorf("%w: context %s: has a location of origin", ErrInvalid, quote(name))
		}
	}
	return nil
}

// refusal is the reason an entry is refused; it never quotes the value.
type refusal string

func (r refusal) Error() string { return string(r) }

const noFiles = "references to local files are not allowed, credentials must be inline"

func checkCluster(c *clientcmdapi.Cluster, opts Options) error {
	switch {
	case c == nil:
		return refusal("empty")
	case c.CertificateAuthority != "":
		return refusal("certificate-authority: " + noFiles)
	case c.LocationOfOrigin != "":
		return refusal("has a location of origin")
	case c.ProxyURL != "":
		return refusal("proxy-url is not allowed")
	case c.InsecureSkipTLSVerify && !opts.AllowInsecureSkipTLSVerify:
		return refusal("insecure-skip-tls-verify is not allowed")
	case c.InsecureSkipTLSVerify && len(c.CertificateAuthorityData) > 0:
		return refusal("insecure-skip-tls-verify with certificate-authority-data")
	}
	if len(c.CertificateAuthorityData) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CertificateAuthorityData) {
		return refusal("certificate-authority-data holds no PEM certificate")
	}
	if _, err := ServerURL(c.Server); err != nil {
		return err
	}
	return nil
}

func checkUser(u *clientcmdapi.AuthInfo) error {
	switch {
	case u == nil:
		return refusal("empty")
	case u.TokenFile != "":
		return refusal("tokenFile: " + noFiles)
	case u.ClientCertificate != "":
		return refusal("client-certificate: " + noFiles)
	case u.ClientKey != "":
		return refusal("client-key: " + noFiles)
	case u.LocationOfOrigin != "":
		return refusal("has a location of origin")
	case u.Exec != nil:
		return refusal("exec credential plugins are not allowed")
	case u.AuthProvider != nil:
		return refusal("auth providers are not allowed")
	case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
		return refusal("impersonation (act-as) is not allowed")
	case u.Token != "" && (u.Username != "" || u.Password != ""):
		return refusal("both a token and a username or password")
	case hasControl(u.Token) || hasControl(u.Username) || hasControl(u.Password):
		return refusal("control characters in a credential")
	case (len(u.ClientCertificateData) > 0) != (len(u.ClientKeyData) > 0):
		return refusal("a client certificate needs its key, and a key its certificate")
	}
	if len(u.ClientCertificateData) > 0 {
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			return refusal("client-certificate-data and client-key-data are not a key pair")
		}
	}
	return nil
}

// current returns the cluster and user of the current context. Without one,
// the choice between several contexts would be a guess, so it is refused.
func current(cfg *clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	if cfg.CurrentContext == "" {
		return nil, nil, fmt.Errorf("%w: no current-context", ErrInvalid)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil, nil, fmt.Errorf("%w: current-context %s does not exist", ErrInvalid, quote(cfg.CurrentContext))
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil {
		return nil, nil, fmt.Errorf("%w: context %s: cluster %s does not exist", ErrInvalid, quote(cfg.CurrentContext), quote(ctx.Cluster))
	}
	user := &clientcmdapi.AuthInfo{} // no user: anonymous
	if ctx.AuthInfo != "" {
		if user = cfg.AuthInfos[ctx.AuthInfo]; user == nil {
			return nil, nil, fmt.Errorf("%w: context %s: user %s does not exist", ErrInvalid, quote(cfg.CurrentContext), quote(ctx.AuthInfo))
		}
	}
	return cluster, user, nil
}

// build makes the REST config from checked inline data only.
func build(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) (*rest.Config, error) {
	server, err := ServerURL(c.Server)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &rest.Config{
		Host:               server.String(),
		BearerToken:        u.Token,
		Username:           u.Username,
		Password:           u.Password,
		DisableCompression: c.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   c.InsecureSkipTLSVerify,
			ServerName: c.TLSServerName,
			CAData:     clone(c.CertificateAuthorityData),
			CertData:   clone(u.ClientCertificateData),
			KeyData:    clone(u.ClientKeyData),
		},
	}, nil
}

// ServerURL parses a kubeconfig's server: an absolute http or https URL with
// a host, and without credentials, query or fragment.
func ServerURL(server string) (*url.URL, error) {
	const maxServer = 2048
	switch {
	case server == "":
		return nil, refusal("no server")
	case len(server) > maxServer:
		return nil, refusal(fmt.Sprintf("the server URL is longer than %d bytes", maxServer))
	}
	if hasControl(server) || strings.ContainsFunc(server, unicode.IsSpace) {
		return nil, refusal("the server has control characters or spaces")
	}
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return nil, refusal("the server is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, refusal("the server's scheme must be https or http")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, refusal("the server has no host")
	case u.User != nil:
		return nil, refusal("the server URL must not carry credentials")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "":
		return nil, refusal("the server URL must not have a query or fragment")
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 || fmt.Sprint(n) != p {
			return nil, refusal("the server's port is invalid")
		}
	}
	return u, nil
}

// hasControl reports whether s has control characters, which would end or
// split the header a credential travels in.
func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
