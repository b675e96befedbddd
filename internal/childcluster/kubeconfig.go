package childcluster

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfigFromKubeconfig parses a child cluster's kubeconfig into a REST
// config, the default of Options.NewRESTConfig. A kubeconfig read from a Secret
// is untrusted: unlike clientcmd.RESTConfigFromKubeConfig it refuses exec
// plugins and auth providers (they would run programs in the controller) and
// references to local files (a token or key file of the controller could be
// sent to any server), so credentials must be inline.
func RESTConfigFromKubeconfig(kubeconfig []byte) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKubeconfig, redact(err.Error(), kubeconfig))
	}
	switch {
	case cfg.ExecProvider != nil:
		return nil, fmt.Errorf("%w: exec credential plugins are not allowed", ErrInvalidKubeconfig)
	case cfg.AuthProvider != nil:
		return nil, fmt.Errorf("%w: auth providers are not allowed", ErrInvalidKubeconfig)
	case cfg.BearerTokenFile != "", cfg.CertFile != "", cfg.KeyFile != "", cfg.CAFile != "":
		return nil, fmt.Errorf("%w: references to local files are not allowed, credentials must be inline", ErrInvalidKubeconfig)
	case cfg.Host == "":
		return nil, fmt.Errorf("%w: no server", ErrInvalidKubeconfig)
	}
	return cfg, nil
}

// kubeconfigHash identifies the content of a kubeconfig without keeping it.
func kubeconfigHash(kubeconfig []byte) [sha256.Size]byte { return sha256.Sum256(kubeconfig) }

// redact removes from msg every token of the kubeconfig long enough to be a
// credential, so that parser errors echoing the input never leak secret data.
func redact(msg string, kubeconfig []byte) string {
	for _, field := range bytes.Fields(kubeconfig) {
		for _, part := range bytes.FieldsFunc(field, func(r rune) bool { return strings.ContainsRune(`:"',{}[]`, r) }) {
			if len(part) >= 8 {
				msg = strings.ReplaceAll(msg, string(part), "[redacted]")
			}
		}
	}
	return msg
}
