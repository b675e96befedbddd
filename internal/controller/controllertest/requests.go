package controllertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/apiaryhq/apiary/internal/childcluster"
)

// APIRequest is one API request Apiary's manager made, parsed from its URL.
type APIRequest struct {
	// side is "management" or "child".
	Side string
	// Verb is the HTTP method, or WATCH for a watch.
	Verb string
	// Cluster is the ClusterDeployment ("<ns>/<name>") whose child cache
	// made a list or watch (childcluster.RequestCluster), else empty.
	Cluster string
	// resource is the resource with its subresource ("workspacedeployments/status").
	Resource  string
	Namespace string
	// name is the object's name, from the path or, for a create, the body.
	Name string
}

// String names the side, verb and resource of r.
func (r APIRequest) String() string {
	return fmt.Sprintf("%s %s %s", r.Side, r.Verb, r.Resource)
}

// detail names the object too.
func (r APIRequest) detail() string {
	return fmt.Sprintf("%s %s %s %s/%s", r.Side, r.Verb, r.Resource, r.Namespace, r.Name)
}

// RequestLog records every request of Apiary's manager, watches included
// (Verb WATCH), on the management cluster and on every child, for the
// request-budget tests.
type RequestLog struct {
	mu  sync.Mutex
	all []APIRequest
	// management and managementWrites count the management requests but
	// watches, and those that are not reads, for the benchmarks.
	Management, ManagementWrites atomic.Int64
}

// Requests records the API requests of the manager Main starts.
var Requests = &RequestLog{}

func (l *RequestLog) record(side string, req *http.Request) {
	r := parseRequest(side, req)
	if req.URL.Query().Get("watch") == "true" {
		r.Verb = "WATCH"
	}
	if cd, ok := childcluster.RequestCluster(req.Context()); ok {
		r.Cluster = cd.String()
	}
	if side == "management" && r.Verb != "WATCH" {
		l.Management.Add(1)
		if req.Method != http.MethodGet {
			l.ManagementWrites.Add(1)
		}
	}
	l.mu.Lock()
	l.all = append(l.all, r)
	l.mu.Unlock()
}

// Since returns the requests recorded after mark (a len of an earlier call
// to mark) that keep says are of interest.
func (l *RequestLog) Since(mark int, keep func(APIRequest) bool) []APIRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []APIRequest
	for _, r := range l.all[mark:] {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// RequestsIn is how many requests Apiary made to the management cluster's
// objects of a namespace, watches included.
func RequestsIn(ns string) int {
	return len(Requests.Since(0, func(r APIRequest) bool { return r.Side == "management" && r.Namespace == ns }))
}

// InformerRequests returns the list and watch requests of Nodes and Pods
// the caches of cluster ("<ns>/<name>") made to its child since mark.
func InformerRequests(mark int, cluster string) []APIRequest {
	return Requests.Since(mark, func(r APIRequest) bool {
		return r.Side == "child" && r.Cluster == cluster && (r.Resource == "nodes" || r.Resource == "pods") &&
			(r.Verb == "WATCH" || r.Verb == http.MethodGet && r.Name == "")
	})
}

// Mark is how many requests were recorded so far, for Since.
func (l *RequestLog) Mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// Tally counts requests by side, verb and resource, sorted for printing.
func Tally(rs []APIRequest) []string {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.String()]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%d× %s", n, k))
	}
	slices.Sort(out)
	return out
}

// parseRequest reads side, verb, resource, namespace and name from a
// request's path: /api/v1/[namespaces/<ns>/]<resource>[/<name>[/<sub>]] or
// /apis/<group>/<version>/... The body of a create is read (and restored)
// for the new object's name.
func parseRequest(side string, req *http.Request) APIRequest {
	r := APIRequest{Side: side, Verb: req.Method}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		r.Resource = req.URL.Path
		return r
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 0 {
		r.Resource = parts[0]
	}
	if len(parts) > 1 {
		r.Name = parts[1]
	}
	if len(parts) > 2 {
		r.Resource += "/" + parts[2]
	}
	if r.Resource == "namespaces" && r.Namespace == "" && len(parts) > 1 {
		r.Namespace = r.Name
	}
	if req.Method == http.MethodPost && r.Name == "" && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		var meta struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		switch {
		case err != nil:
		case json.Unmarshal(body, &meta) == nil:
			r.Name = meta.Metadata.Name
		default:
			// Protobuf: the name is the first field of ObjectMeta; good
			// enough for names of child namespaces (ws-<workspace>).
			if i := bytes.Index(body, []byte("ws-")); i >= 0 {
				end := i
				for end < len(body) && isNameByte(body[end]) {
					end++
				}
				r.Name = string(body[i:end])
			}
		}
		if r.Resource == "namespaces" {
			r.Namespace = r.Name
		}
	}
	return r
}

func isNameByte(b byte) bool {
	return b == '-' || b == '.' || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9')
}

// recordingTransport records the requests of one side before passing them on.
type recordingTransport struct {
	Side string
	next http.RoundTripper
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	Requests.record(t.Side, req)
	if req.URL.Query().Get("watch") != "true" {
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && t.Side == "management" && strings.HasSuffix(req.URL.Path, "/servicesets") {
		resp.Body = &laggingBody{ReadCloser: resp.Body}
	}
	return resp, err
}

// ServiceSetWatchLag delays what Apiary's ServiceSet watches receive, so
// that a test can make Apiary's cache lag behind the API server as a busy
// one does.
var ServiceSetWatchLag atomic.Int64

// laggingBody hands on a watch's bytes ServiceSetWatchLag after they came.
type laggingBody struct{ io.ReadCloser }

func (b *laggingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if lag := time.Duration(ServiceSetWatchLag.Load()); lag > 0 && n > 0 {
		time.Sleep(lag)
	}
	return n, err
}

// childRESTConfig is the manager's child kubeconfig parser with every
// child request recorded.
func childRESTConfig(kubeconfig []byte) (*rest.Config, error) {
	cfg, err := childcluster.RESTConfigFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recordingTransport{Side: "child", next: rt} })
	return cfg, nil
}
