package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

var (
	// ErrUnreachable marks errors where the Git server could not be reached.
	ErrUnreachable = errors.New("git server unreachable")
	// ErrAuthFailed marks errors where the Git server refused the credentials.
	ErrAuthFailed = errors.New("git authentication failed")
	// ErrPushRejected marks a push the server rejected, including a
	// non-fast-forward that persisted after all retries.
	ErrPushRejected = errors.New("git push rejected")
	// ErrInvalidTree marks a tree under Path that kustomize cannot build; it is never pushed.
	ErrInvalidTree = errors.New("kustomize cannot build the tree")
)

// IsUnreachable reports whether err means the Git server could not be reached.
func IsUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// IsAuthFailed reports whether err means the Git server refused the credentials.
func IsAuthFailed(err error) bool { return errors.Is(err, ErrAuthFailed) }

// IsPushRejected reports whether err means the Git server rejected a push.
func IsPushRejected(err error) bool { return errors.Is(err, ErrPushRejected) }

// classify tags a transport error with ErrAuthFailed or ErrUnreachable when it
// is one of those; other errors are returned unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod):
		return fmt.Errorf("%w: %w", ErrAuthFailed, err)
	case isNetworkError(err):
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return err
}

func isNetworkError(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	// go-git flattens some dial errors into strings.
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "i/o timeout")
}

// isNonFastForward reports whether a push error means the remote branch moved
// (or was being moved).
func isNonFastForward(err error) bool {
	msg := err.Error()
	// A server that was updating the ref for another writer at the same
	// moment refuses with a lock failure; that is the same race.
	return strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") ||
		strings.Contains(msg, "stale info") || strings.Contains(msg, "failed to update ref") ||
		strings.Contains(msg, "cannot lock ref")
}

// redactURL removes credentials from a repository URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if err != nil {
			return "<unparsable url>"
		}
		return raw
	}
	return u.Redacted()
}

// CheckRemoteURL refuses a remote that is not http://, https:// or ssh://,
// the schemes a Flux GitRepository accepts. A local path or a file:// URL
// would have the manager clone and push its own files, such as another
// tenant's checkout.
func CheckRemoteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("repository URL %s cannot be parsed", redactURL(raw))
	}
	switch u.Scheme {
	case "http", "https", "ssh":
		if u.Host == "" {
			return fmt.Errorf("repository URL %s names no host", redactURL(raw))
		}
		return nil
	}
	return fmt.Errorf("repository URL %s is not http://, https:// or ssh://", redactURL(raw))
}
