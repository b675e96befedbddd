package activity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// RESTConfigs gives the REST config of a ClusterDeployment's child cluster;
// childcluster.Manager is one.
type RESTConfigs interface {
	RESTConfig(ctx context.Context, cd types.NamespacedName) (*rest.Config, error)
}

// Endpoint is the source of the JupyterStatus and CodeServerHealthz
// formats: it GETs the workspace's server through the child API server's
// Service proxy, /api/v1/namespaces/<ns>/services/<svc>:<port>/proxy/<path>,
// so the manager needs no network path to the child's pods. The API server
// drops the Authorization header once it has authenticated the manager, so
// the token goes as the query parameter token, as Jupyter accepts it. An
// Endpoint keeps an HTTP client per cluster; it must not be copied after
// its first use.
type Endpoint struct {
	// Clusters gives the child's REST config.
	Clusters RESTConfigs
	// Timeout bounds a probe; default 5s.
	Timeout time.Duration

	mu      sync.Mutex
	clients map[types.NamespacedName]cachedClient
}

var _ Source = (*Endpoint)(nil)

// maxPath bounds Target.Path, in bytes.
const maxPath = 256

// pathRE is the paths a target may ask: relative segments of unreserved
// characters, none starting with a dot (so no dot segment), and no query,
// fragment or escape.
var pathRE = regexp.MustCompile(`^[A-Za-z0-9_~-][A-Za-z0-9._~-]*(/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*/?$`)

// ProxyPath returns the path of a target's Service proxy, below the API
// server's URL, or why the target cannot be asked.
func ProxyPath(t Target) (string, error) {
	for what, name := range map[string]string{"namespace": t.Namespace, "service": t.Service} {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return "", fmt.Errorf("the %s is not a DNS label", what)
		}
	}
	if t.Port < 1 || t.Port > 65535 {
		return "", fmt.Errorf("port %d is not a port", t.Port)
	}
	p := t.Path
	if p == "" {
		p = DefaultPath(t.Format)
	}
	p = strings.TrimPrefix(p, "/")
	if len(p) > maxPath || !pathRE.MatchString(p) {
		return "", errors.New("the path is not a plain relative path")
	}
	return "/api/v1/namespaces/" + t.Namespace + "/services/" + t.Service + ":" + strconv.Itoa(int(t.Port)) + "/proxy/" + p, nil
}

// Observe asks the target's server, through its child's API server, when
// it was last active.
func (e *Endpoint) Observe(ctx context.Context, t Target, now time.Time) (Observation, error) {
	parse := map[Format]func([]byte, time.Time) (Observation, error){
		JupyterStatus: parseJupyter, CodeServerHealthz: parseCodeServer,
	}[t.Format]
	if parse == nil {
		return Observation{}, fmt.Errorf("endpoint: format %s is not served here", t.Format.label())
	}
	path, err := ProxyPath(t)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint: %w", err)
	}
	where := fmt.Sprintf("service %s/%s:%d", t.Namespace, t.Service, t.Port)
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if e.Clusters == nil {
		return Observation{}, errors.New("endpoint: no child clusters to reach")
	}
	cfg, err := e.Clusters.RESTConfig(ctx, t.Cluster)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: %w", where, err)
	}
	base, err := url.Parse(cfg.Host)
	if err != nil || base.Host == "" {
		return Observation{}, fmt.Errorf("endpoint %s: the child's API server URL cannot be parsed", where)
	}
	u := base.JoinPath(path)
	if t.Token != "" {
		u.RawQuery = url.Values{"token": {t.Token}}.Encode()
	}

	hc, err := e.httpClient(t.Cluster, cfg)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: building the HTTP client: %w", where, err)
	}
	if err := checkService(ctx, hc, base, t); err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: %w", where, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: building the request", where)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: %w", where, transportErr(err))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		// The body is the child's, or the workspace's: never read into an error.
		return Observation{}, fmt.Errorf("endpoint %s: HTTP %d", where, resp.StatusCode)
	}
	body, err := readBounded(resp)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: %w", where, err)
	}
	obs, err := parse(body, now)
	if err != nil {
		return Observation{}, fmt.Errorf("endpoint %s: %w", where, err)
	}
	return obs, nil
}

// MaxService bounds the Service read before a probe, in bytes: the API
// server stores objects of at most about 1.5 MiB, and a Service is a few KiB
// unless its owner pads it.
const MaxService = 1 << 20

// RefusedError is why a target was not asked: what it names is not what a
// workspace's release makes. A Prober counts it as refused.
type RefusedError struct{ What string }

func (e *RefusedError) Error() string { return "refused: " + e.What }

// checkService reads the target's Service before it is asked through its
// proxy, and refuses one of type ExternalName. The API server's Service
// proxy (kube-apiserver 1.35, pkg/registry/core/service/storage
// ResourceLocation) never follows spec.externalName: it proxies only to an
// address of the Service's Endpoints that is a pod of the same namespace,
// and so answers 404 or 503 for an ExternalName Service. A workspace's
// chart never makes one under the name of its access endpoint's Service,
// so one there was made by someone else, and a proxy of another version or
// distribution might follow it: it is not asked.
func checkService(ctx context.Context, hc *http.Client, base *url.URL, t Target) error {
	u := base.JoinPath("/api/v1/namespaces/" + t.Namespace + "/services/" + t.Service)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return errors.New("building the request of the Service")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reading the Service: %w", transportErr(err))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading the Service: HTTP %d", resp.StatusCode)
	}
	var svc struct {
		Spec struct {
			Type string `json:"type"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxService)).Decode(&svc); err != nil {
		return errors.New("reading the Service: not a Service of at most 1 MiB")
	}
	if svc.Spec.Type == string(corev1.ServiceTypeExternalName) {
		return &RefusedError{What: "the Service is of type ExternalName, which the workspace's release does not make"}
	}
	return nil
}

// httpClient returns the HTTP client of a cluster, built once per REST
// config (its server and credentials) so that probes share connections.
func (e *Endpoint) httpClient(cd types.NamespacedName, cfg *rest.Config) (*http.Client, error) {
	key := configKey(cfg)
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[cd]; ok && c.key == key {
		return c.client, nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0 // each probe's context bounds it
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = noRedirects
	if e.clients == nil {
		e.clients = map[types.NamespacedName]cachedClient{}
	}
	if old, ok := e.clients[cd]; ok {
		old.client.CloseIdleConnections()
	}
	e.clients[cd] = cachedClient{key: key, client: hc}
	return hc, nil
}

// cachedClient is the HTTP client of a cluster, and the key of its config.
type cachedClient struct {
	key    [sha256.Size]byte
	client *http.Client
}

// configKey identifies what of a REST config makes its HTTP client: the
// server, its TLS settings and the credentials, without keeping them.
func configKey(cfg *rest.Config) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{
		[]byte(cfg.Host), []byte(cfg.APIPath), []byte(cfg.ServerName), []byte(strconv.FormatBool(cfg.Insecure)),
		cfg.CAData, cfg.CertData, cfg.KeyData, []byte(cfg.BearerToken), []byte(cfg.Username), []byte(cfg.Password),
	} {
		_, _ = h.Write([]byte(strconv.Itoa(len(b)) + ":"))
		_, _ = h.Write(b)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// noRedirects makes a client return a redirect as the answer instead of
// following it (and resending the token elsewhere).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// transportErr drops the URL (and so the token in its query) from an error
// of http.Client.Do, keeping what it wraps.
func transportErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: timed out: %w", ue.Op, ue.Err)
		}
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
