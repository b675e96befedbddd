package queueview

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/quota"
)

// Path is where a namespace's places are served: GET, with a bearer token
// whose subject may list WorkspaceDeployments in the namespace.
const Path = "/namespaces/{namespace}/queue"

// MaxInFlight bounds the requests served at once; more are refused (429).
const MaxInFlight = 4

// Server serves Places over HTTPS to callers the API server authenticates
// (TokenReview) and authorises to list the namespace's WorkspaceDeployments
// (SubjectAccessReview), both cached as Kubernetes' delegating
// authenticator and authorizer cache them. It reads only the cache.
type Server struct {
	// Reader is the manager's cache.
	Reader client.Reader
	// Config reaches the API server for the reviews.
	Config *rest.Config
	// BindAddress is where it listens.
	BindAddress string
	// CertDir holds tls.crt and tls.key; a self-signed certificate when empty.
	CertDir string
	Log     logr.Logger
}

// NeedLeaderElection: every replica serves from its cache.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	h, err := s.Handler()
	if err != nil {
		return err
	}
	cert, err := s.certificate()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.BindAddress)
	if err != nil {
		return fmt.Errorf("queue positions: listening on %s: %w", s.BindAddress, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	s.Log.Info("serving queue positions", "address", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("queue positions: %w", err)
	}
	return nil
}

func (s *Server) certificate() (tls.Certificate, error) {
	if s.CertDir != "" {
		return tls.LoadX509KeyPair(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("apiary-queue", nil, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("queue positions: a self-signed certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// retry is the back-off of the reviews (the API server's own default).
var retry = &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// Handler is the endpoint, without TLS.
func (s *Server) Handler() (http.Handler, error) {
	authn, err := authenticationv1.NewForConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("queue positions: %w", err)
	}
	authz, err := authorizationv1.NewForConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("queue positions: %w", err)
	}
	who, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous: &apiserver.AnonymousAuthConfig{Enabled: false}, CacheTTL: time.Minute,
		TokenAccessReviewClient: authn, TokenAccessReviewTimeout: 10 * time.Second, WebhookRetryBackoff: retry,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("queue positions: an authenticator: %w", err)
	}
	may, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz, AllowCacheTTL: time.Minute, DenyCacheTTL: 30 * time.Second, WebhookRetryBackoff: retry,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("queue positions: an authorizer: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, s.guard(who, may))
	return mux, nil
}

// guard admits a request whose subject may list the namespace's
// workspaces, at most MaxInFlight at once.
func (s *Server) guard(who authenticator.Request, may authorizer.Authorizer) http.Handler {
	slots := make(chan struct{}, MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		ns := req.PathValue("namespace")
		res, ok, err := who.AuthenticateRequest(req)
		if err != nil || !ok {
			http.Error(w, "Unauthorized: a bearer token the API server accepts is needed", http.StatusUnauthorized)
			return
		}
		decision, _, err := may.Authorize(req.Context(), authorizer.AttributesRecord{User: res.User, Verb: "list",
			Namespace: ns, APIGroup: workspacesv1.GroupVersion.Group, APIVersion: workspacesv1.GroupVersion.Version,
			Resource: "workspacedeployments", ResourceRequest: true})
		if err != nil || decision != authorizer.DecisionAllow {
			http.Error(w, fmt.Sprintf("Forbidden: %s may not list WorkspaceDeployments in namespace %q", res.User.GetName(), ns), http.StatusForbidden)
			return
		}
		places, err := s.read(req.Context(), ns)
		if err != nil {
			s.Log.Error(err, "reading queue positions", "namespace", ns)
			http.Error(w, "could not read the queues", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(places)
	})
}

// read computes the namespace's places from the cache.
func (s *Server) read(ctx context.Context, ns string) ([]Place, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := s.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing workspaces: %w", err)
	}
	workspaces := make([]*workspacesv1.WorkspaceDeployment, len(list.Items))
	for i := range list.Items {
		workspaces[i] = &list.Items[i]
	}
	quotaList := &quotav1alpha1.TenantQuotaList{}
	if err := s.Reader.List(ctx, quotaList); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas: %w", err)
	}
	nsLabels := map[string]map[string]string{}
	var readErr error
	labelsOf := func(namespace string) map[string]string {
		l, ok := nsLabels[namespace]
		if !ok {
			var err error
			l, err = quota.NamespaceLabels(ctx, s.Reader, namespace)
			readErr = errors.Join(readErr, err)
			nsLabels[namespace] = l
		}
		return l
	}
	quotas := make([]TenantQuota, len(quotaList.Items))
	for i := range quotaList.Items {
		q := &quotaList.Items[i]
		// A selector that does not parse selects nothing (the quota's
		// controller reports it).
		quotas[i] = TenantQuota{Name: q.Name, Selects: func(namespace string) bool {
			ok, _ := quota.Selects(q, labelsOf(namespace))
			return ok
		}}
	}
	places := Places(ns, workspaces, quotas)
	if places == nil {
		places = []Place{}
	}
	return places, readErr
}
