package childcluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestSafeError(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl"
	body := "<html>" + strings.Repeat("secret-body ", 1000) + "</html>"
	for name, tc := range map[string]struct {
		err     error
		want    []string
		notWant []string
	}{
		"nil": {err: nil},
		"status message kept short and quoted": {
			err:  fmt.Errorf("get: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n1")),
			want: []string{`get: the child's API server answered 404 NotFound: "nodes \"n1\" not found"`},
		},
		"status message with new lines and a token": {
			err:     apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("line one\nAuthorization: Bearer "+jwt)),
			want:    []string{"403 Forbidden", "line one Authorization: [redacted]"},
			notWant: []string{"\n", jwt},
		},
		"raw response body withheld": {
			err:     apierrors.NewGenericServerResponse(500, "get", schema.GroupResource{}, "", body, 0, true),
			want:    []string{"500 InternalError (response body withheld)"},
			notWant: []string{"secret-body", "html"},
		},
		"forged reason": {
			err:  &apierrors.StatusError{ErrStatus: apierrors.NewBadRequest("x").ErrStatus},
			want: []string{"400 BadRequest"},
		},
		"credentials in text": {
			err: errors.New(`dial https://admin:hunter2@child.example: token=abcdef123 password: "p4ss" ` + jwt +
				" -----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- aGVsbG8gd29ybGQgdGhpcyBpcyBhIHNlY3JldCBrZXk0Mg== " +
				"0123456789abcdef0123456789abcdef01"),
			want:    []string{"https://[redacted]@child.example", "token=[redacted]", `password: "[redacted]`},
			notWant: []string{"hunter2", "abcdef123", "p4ss", jwt, "MIIB", "aGVsbG8", "0123456789abcdef0123456789abcdef01"},
		},
		"names are kept": {
			err:  errors.New(`cluster team-a/gpu-cluster-with-a-rather-long-name-01: namespaces "kube-system" not found`),
			want: []string{`cluster team-a/gpu-cluster-with-a-rather-long-name-01: namespaces "kube-system" not found`},
		},
		"bidirectional override": {err: errors.New("a\u202eb\x00c"), want: []string{"a b c"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := SafeError(tc.err)
			if tc.err == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			for _, w := range tc.want {
				g.Expect(got).To(ContainSubstring(w))
			}
			for _, nw := range tc.notWant {
				g.Expect(got).NotTo(ContainSubstring(nw))
			}
			g.Expect(len(got)).To(BeNumerically("<=", MaxErrorText))
		})
	}
}

func TestSafeErrorBoundsText(t *testing.T) {
	g := NewWithT(t)
	got := SafeError(errors.New(strings.Repeat("é", 10000)))
	g.Expect(len(got)).To(BeNumerically("<=", MaxErrorText))
	g.Expect(got).To(HaveSuffix("…"))
	g.Expect(utf8.ValidString(got)).To(BeTrue())
	g.Expect(SafeError(errors.New("short"))).To(Equal("short"))
}

// TestClusterErrKeepsTheChain: errors of the package carry safe text and
// still unwrap to what they describe.
func TestClusterErrKeepsTheChain(t *testing.T) {
	g := NewWithT(t)
	cd := types.NamespacedName{Namespace: "ns", Name: "cd"}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n1")
	err := clusterErr(cd, "get", notFound)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	g.Expect(err.Error()).To(Equal(`cluster ns/cd: get: the child's API server answered 404 NotFound: "nodes \"n1\" not found"`))
	g.Expect(IsUnreachable(err)).To(BeFalse())

	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err = clusterErr(cd, "list", refused)
	g.Expect(err).To(MatchError(ErrUnreachable))
	g.Expect(err).To(MatchError(syscall.ECONNREFUSED))
	g.Expect(err.Error()).To(Equal("cluster ns/cd: list: child cluster unreachable: dial tcp: connection refused"))

	body := apierrors.NewGenericServerResponse(503, "get", schema.GroupResource{}, "", "<b>proxy page</b>", 0, true)
	err = clusterErr(cd, "get", fmt.Errorf("wrapped: %w", clusterErr(cd, "inner", body)))
	g.Expect(err.Error()).NotTo(ContainSubstring("proxy page"))
	g.Expect(err.Error()).To(ContainSubstring("503 ServiceUnavailable (response body withheld)"))
	g.Expect(err).To(MatchError(ErrUnreachable))
	g.Expect(clusterErr(cd, "x", nil)).To(BeNil())
}

func FuzzSafeError(f *testing.F) {
	f.Add("token=abc Bearer x -----BEGIN KEY-----", 0)
	f.Add("\xff\xfe\u202e", 500)
	f.Fuzz(func(t *testing.T, msg string, code int) {
		var err error = errors.New(msg)
		if code != 0 {
			err = fmt.Errorf("wrap: %w", apierrors.NewGenericServerResponse(code, "get", schema.GroupResource{}, "", msg, 0, code%2 == 0))
		}
		got := SafeError(err)
		if len(got) > MaxErrorText || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\x00") {
			t.Fatalf("unsafe text %q", got)
		}
	})
}

func TestTrimGatewayBoundsConditionMessages(t *testing.T) {
	g := NewWithT(t)
	gw := &gatewayv1.Gateway{Status: gatewayv1.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed",
		Message: "line\ninjected token=" + strings.Repeat("x", 30000)}}}}
	msg := TrimGateway(gw).Status.Conditions[0].Message
	g.Expect(len(msg)).To(BeNumerically("<=", MaxErrorText))
	g.Expect(msg).To(HavePrefix("line injected token=[redacted]"))
}
