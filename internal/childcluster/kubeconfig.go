package childcluster

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"unicode/utf8"

	"k8s.io/client-go/rest"

	"github.com/apiaryhq/apiary/internal/kubeconfig"
)

// RESTConfigFromKubeconfig parses a child cluster's kubeconfig into a REST
// config with kubeconfig.RESTConfig: a kubeconfig read from a Secret is
// untrusted, so it is checked as raw data before anything is built, and local
// files, exec plugins, auth providers, proxies, impersonation and
// insecure-skip-tls-verify are refused without opening any file.
func RESTConfigFromKubeconfig(data []byte) (*rest.Config, error) {
	return kubeconfig.RESTConfig(data, kubeconfig.Options{})
}

// kubeconfigHash identifies the content of a kubeconfig without keeping it.
func kubeconfigHash(kubeconfig []byte) [sha256.Size]byte { return sha256.Sum256(kubeconfig) }

// redactInput hides every word of msg, of 8 bytes or more, that the
// kubeconfig contains, for errors of a custom parser that may echo it. msg is
// short (SafeError), so the cost is bounded by its words, not the input's.
func redactInput(msg string, kubeconfig []byte) string {
	isSep := func(r rune) bool { return r <= ' ' || strings.ContainsRune(`:"',{}[]()=;`, r) }
	var out strings.Builder
	for len(msg) > 0 {
		end := strings.IndexFunc(msg, isSep)
		if end < 0 {
			end = len(msg)
		}
		if word := msg[:end]; len(word) >= 8 && bytes.Contains(kubeconfig, []byte(word)) {
			out.WriteString("[redacted]")
		} else {
			out.WriteString(word)
		}
		if end < len(msg) {
			_, sepLen := utf8.DecodeRuneInString(msg[end:])
			out.WriteString(msg[end : end+sepLen])
			end += sepLen
		}
		msg = msg[end:]
	}
	return out.String()
}
