// Package kubeconfig turns an untrusted kubeconfig (one a tenant may write,
// such as a child cluster's Secret <cd>-kubeconfig) into a REST config
// without touching the local filesystem or running anything.
//
// The kubeconfig is bounded in size and decoded as raw data first. Then it is
// refused if any of its clusters or users names a local file, an exec plugin,
// an auth provider, a proxy or impersonation, if its current context is
// missing or dangling, if it skips TLS verification (unless allowed), or if
// its server is not an absolute http(s) URL that the ServerPolicy allows.
// Only then is the rest.Config built, from inline data alone.
package kubeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxSize bounds a kubeconfig; larger ones are refused before decoding.
const MaxSize = 1 << 20

var (
	// ErrInvalid means the kubeconfig cannot be decoded or asks for
	// something that is refused.
	ErrInvalid = errors.New("invalid kubeconfig")
	// ErrServerNotAllowed means the server is outside the ServerPolicy. It
	// wraps ErrInvalid when the kubeconfig names it; the policy's dialer
	// returns it alone when a connection would reach a refused address.
	ErrServerNotAllowed = errors.New("server not allowed")
)

// Options configure RESTConfig.
type Options struct {
	// Policy restricts the server; the zero policy allows any http(s) URL.
	Policy ServerPolicy
	// AllowInsecureSkipTLSVerify accepts insecure-skip-tls-verify: true.
	AllowInsecureSkipTLSVerify bool
}

// RESTConfig checks kubeconfig and builds the REST config of its current
// context. Errors wrap ErrInvalid and never quote file paths or credentials.
func RESTConfig(kubeconfig []byte, opts Options) (*rest.Config, error) {
	cfg, err := decode(kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := checkAll(cfg, opts); err != nil {
		return nil, err
	}
	cluster, user, err := current(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := build(cluster, user)
	if err != nil {
		return nil, err
	}
	if err := opts.Policy.Apply(rc); err != nil {
		return nil, err
	}
	return rc, nil
}

// decode parses kubeconfig as raw data. clientcmd.Load only decodes: it
// neither resolves paths nor reads files.
func decode(kubeconfig []byte) (*clientcmdapi.Config, error) {
	if len(kubeconfig) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(kubeconfig), MaxSize)
	}
	if len(bytes.TrimSpace(kubeconfig)) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalid)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot decode: %s", ErrInvalid, decodeError(err))
	}
	return cfg, nil
}

// yamlPosition finds the position a YAML syntax error points at.
var yamlPosition = regexp.MustCompile(`yaml: line \d+(: column \d+)?`)

// decodeError describes a decoding error without quoting the input: some
// decoders print the whole list they failed on, client keys included.
func decodeError(err error) string {
	msg := err.Error()
	for _, list := range []string{"NamedCluster", "NamedAuthInfo", "NamedContext", "NamedExtension"} {
		if strings.Contains(msg, "[]"+list+" ") && strings.Contains(msg, "duplicate name") {
			return "two entries of one name in " + strings.TrimPrefix(list, "Named") + "s"
		}
	}
	if pos := yamlPosition.FindString(msg); pos != "" {
		return "malformed YAML at " + strings.TrimPrefix(pos, "yaml: ")
	}
	if strings.Contains(msg, "yaml") || strings.Contains(msg, "json") {
		return "malformed YAML or JSON"
	}
	return "not a kubeconfig"
}

// quote names an entry of the kubeconfig in a message, bounded.
func quote(name string) string {
	const maxName = 64
	if len(name) > maxName {
		name = strings.ToValidUTF8(name[:maxName], "") + "…"
	}
	return fmt.Sprintf("%q", name)
}
