package childcluster

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// MaxErrorText bounds the text of SafeError, in bytes.
	MaxErrorText = 512
	// maxStatusMessage bounds the message of a child's Status kept in it.
	maxStatusMessage = 160
	// maxScanned bounds the text redacted, so a huge error costs little.
	maxScanned = 16 << 10
)

// SafeError returns err's text fit for a status condition, an event or a log:
// a child's API server is reached through a kubeconfig its tenant may write,
// so whatever it answers is the tenant's text. Answers (API Statuses) are
// reduced to their code, reason and a short quoted message, and to no message
// at all when it carries a raw response body. The text is then stripped of
// control characters, redacted of what looks like a credential, and cut to
// MaxErrorText bytes, ending in "…" when cut. Errors of this package already
// carry such text.
func SafeError(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, status := range statuses(err) {
		raw, safe := status.Error(), statusText(status.(apierrors.APIStatus))
		if raw == "" || !strings.Contains(msg, raw) {
			msg = safe // wrapped in a way that hides where it is: keep only the status
			break
		}
		msg = strings.ReplaceAll(msg, raw, safe)
	}
	return SafeText(msg)
}

// SafeText returns text a child cluster supplied (an error, a condition
// message of one of its objects) stripped of control characters, redacted of
// what looks like a credential, and cut to MaxErrorText bytes.
func SafeText(text string) string {
	return bound(redactCredentials(clean(bound(text, maxScanned))), MaxErrorText)
}

// statuses returns the API Statuses in err's tree, except in errors of this
// package, whose text is already safe.
func statuses(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if _, safe := e.(*clusterError); safe || e == nil {
			return
		}
		if _, ok := e.(apierrors.APIStatus); ok {
			out = append(out, e)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return out
}

// statusText describes a Status without its details or raw body.
func statusText(s apierrors.APIStatus) string {
	st := s.Status()
	// The Status's reason is part of the text, never a condition's reason.
	said := string(st.Reason)
	if !validReason.MatchString(said) {
		said = "Unknown"
	}
	text := fmt.Sprintf("the child's API server answered %d %s", st.Code, said)
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type == metav1.CauseTypeUnexpectedServerResponse {
				return text + " (response body withheld)"
			}
		}
	}
	if st.Message == "" {
		return text
	}
	return fmt.Sprintf("%s: %q", text, bound(clean(st.Message), maxStatusMessage))
}

var validReason = regexp.MustCompile(`^[A-Za-z]{1,40}$`)

// clean replaces invalid UTF-8, control and format characters (new lines,
// bidirectional overrides) with spaces, so text cannot forge lines.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "?")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
}

// bound cuts s to at most n bytes at a rune boundary, marking the cut with "…".
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

const redacted = "[redacted]"

var (
	pemBlock   = regexp.MustCompile(`-----BEGIN[^-]{0,64}-----[\s\S]*?(?:-----END[^-]{0,64}-----|$)`)
	authScheme = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	keyValue   = regexp.MustCompile(`(?i)\b(\w*token|password|passwd|secret|authorization|api[_-]?key|client[_-]?key(?:[_-]?data)?)(\s*["']?\s*[:=]\s*["']?)[^\s"',;&}\])]+`)
	userinfo   = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@`)
	jwt        = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)
	opaqueRun  = regexp.MustCompile(`[A-Za-z0-9+/_=-]{32,}`)
	hexRun     = regexp.MustCompile(`^[0-9a-fA-F]+$`)
	hasUpper   = regexp.MustCompile(`[A-Z]`)
	hasLower   = regexp.MustCompile(`[a-z]`)
	hasDigit   = regexp.MustCompile(`[0-9]`)
)

// looksEncoded reports whether a long run is hex or mixed-case base64.
func looksEncoded(run string) bool {
	return hexRun.MatchString(run) || hasUpper.MatchString(run) && hasLower.MatchString(run) && hasDigit.MatchString(run)
}

// redactCredentials hides what looks like a credential: PEM blocks, Authorization
// values, token=… and password: … pairs, credentials in URLs, JWTs, and long
// runs of hex or mixed-case base64 (names of Kubernetes objects are lower-case).
func redactCredentials(s string) string {
	s = pemBlock.ReplaceAllString(s, redacted)
	s = authScheme.ReplaceAllString(s, "$1 "+redacted)
	s = keyValue.ReplaceAllString(s, "$1$2"+redacted)
	s = userinfo.ReplaceAllString(s, "$1"+redacted+"@")
	s = jwt.ReplaceAllString(s, redacted)
	return opaqueRun.ReplaceAllStringFunc(s, func(run string) string {
		if looksEncoded(run) {
			return redacted
		}
		return run
	})
}

// clusterError is an error of this package about one cluster: its text is
// already safe (SafeError), and it unwraps to the errors it describes.
type clusterError struct {
	msg  string
	errs []error
}

func (e *clusterError) Error() string   { return e.msg }
func (e *clusterError) Unwrap() []error { return e.errs }

// clusterErr names the cluster and what failed, with err's SafeError text,
// and adds ErrUnreachable when err classifies as a connection failure.
func clusterErr(cd types.NamespacedName, what string, err error) error {
	if err == nil {
		return nil
	}
	errs, text := []error{err}, SafeError(err)
	if IsUnreachable(err) && !errors.Is(err, ErrUnreachable) {
		errs, text = []error{ErrUnreachable, err}, ErrUnreachable.Error()+": "+text
	}
	return &clusterError{msg: fmt.Sprintf("cluster %s: %s: %s", cd, what, text), errs: errs}
}
