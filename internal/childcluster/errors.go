package childcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/apiaryhq/apiary/internal/kubeconfig"
)

var (
	// ErrKubeconfigNotFound means the Secret <cd>-kubeconfig, or its key
	// "value", does not exist (yet) in the ClusterDeployment's namespace.
	ErrKubeconfigNotFound = errors.New("kubeconfig not found")
	// ErrInvalidKubeconfig means the kubeconfig cannot be parsed, asks for
	// something Apiary refuses (local files, exec plugins, auth providers,
	// proxies, impersonation) or names a server outside the ServerPolicy.
	// It is kubeconfig.ErrInvalid.
	ErrInvalidKubeconfig = kubeconfig.ErrInvalid
	// ErrUnreachable wraps errors that show the child's API server cannot be
	// reached: refused connections, timeouts, unknown hosts, TLS failures.
	ErrUnreachable = errors.New("child cluster unreachable")
	// ErrCacheStopped is returned by a ClusterCache that was released, forgotten
	// or replaced after its kubeconfig changed; call Watch again.
	ErrCacheStopped = errors.New("child cluster cache stopped")
	// ErrNodesNotWatched is returned by ListNodes when no owner asked for Nodes.
	ErrNodesNotWatched = errors.New("nodes of child cluster are not watched")
	// ErrPodsNotWatched is returned by ListPods when no owner asked for Pods.
	ErrPodsNotWatched = errors.New("pods of child cluster are not watched")
	// ErrGatewaysNotWatched is returned by Gateway when no owner asked for Gateways.
	ErrGatewaysNotWatched = errors.New("gateways of child cluster are not watched")
	// ErrGatewayAPINotServed is returned by Gateway while the cluster does
	// not serve the Gateway API's Gateways (gateway.networking.k8s.io/v1).
	ErrGatewayAPINotServed = errors.New("the Gateway API is not installed")
	// ErrManagerStopped is returned after Stop.
	ErrManagerStopped = errors.New("child cluster manager stopped")
)

// IsUnreachable reports whether err shows that a child's API server cannot be
// reached (as opposed to answering with an error): ErrUnreachable, refused or
// reset connections, unknown hosts, unroutable networks, timeouts, TLS
// failures, and 502/503/504 answers of a proxy in front of it.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnreachable) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	for _, target := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT, syscall.EPIPE,
		context.DeadlineExceeded, os.ErrDeadlineExceeded, io.ErrUnexpectedEOF,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var (
		dnsErr     *net.DNSError
		opErr      *net.OpError
		netErr     net.Error
		verifyErr  *tls.CertificateVerificationError
		headerErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &opErr),
		errors.As(err, &verifyErr), errors.As(err, &headerErr), errors.As(err, &alertErr),
		errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch status.Status().Code {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	// Some client-go paths flatten errors into strings.
	msg := strings.ToLower(err.Error())
	for _, s := range []string{
		"connection refused", "connection reset", "no such host", "i/o timeout",
		"tls handshake timeout", "x509: ", "tls: ", "network is unreachable",
		"no route to host", "client.timeout exceeded", "context deadline exceeded",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
