package world

import (
	"sync"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

const (
	// RegionalAnnotation ("true") on a ClusterDeployment routes it to the
	// regional control plane.
	RegionalAnnotation = "test.apiary.dev/regional"
	// KubeconfigAnnotation on a ClusterDeployment names the route (see
	// Running.Route) its kubeconfig is taken from.
	KubeconfigAnnotation = "test.apiary.dev/tenant-kubeconfig"

	// RouteChild and RouteRegional are the routes of the child and the
	// regional control planes; Start sets them, a suite may replace them
	// (e.g. with a proxy's kubeconfig).
	RouteChild    = "child"
	RouteRegional = "regional"
)

// routes are the kubeconfigs the stand-in hands out, by route name.
type routes struct {
	byName  sync.Map // string → []byte
	mu      sync.Mutex
	routers []func(*k0rdentv1beta1.ClusterDeployment) []byte
}

// Route sets the kubeconfig of a route: RouteChild, RouteRegional, a
// cluster's "namespace/name", or a name KubeconfigAnnotation refers to.
// A nil kubeconfig routes to no kubeconfig at all (the cluster gets no
// kubeconfig Secret, as an adopted one).
func (r *Running) Route(name string, kubeconfig []byte) {
	r.routes.byName.Store(name, kubeconfig)
}

// Unroute removes a route.
func (r *Running) Unroute(name string) { r.routes.byName.Delete(name) }

// Router adds a rule asked before the routes; a nil result passes the
// cluster on.
func (r *Running) Router(f func(*k0rdentv1beta1.ClusterDeployment) []byte) {
	r.routes.mu.Lock()
	defer r.routes.mu.Unlock()
	r.routes.routers = append(r.routes.routers, f)
}

func (r *Running) route(name string) ([]byte, bool) {
	v, ok := r.routes.byName.Load(name)
	if !ok {
		return nil, false
	}
	return v.([]byte), true
}

// KubeconfigFor is the kubeconfig the stand-in writes for a
// ClusterDeployment, the one place that routes clusters: the routers' first
// answer, else the route its KubeconfigAnnotation names, else the route of
// its "namespace/name", else RouteRegional when it has RegionalAnnotation,
// else RouteChild.
func (r *Running) KubeconfigFor(cd *k0rdentv1beta1.ClusterDeployment) []byte {
	r.routes.mu.Lock()
	routers := r.routes.routers
	r.routes.mu.Unlock()
	for _, f := range routers {
		if kc := f(cd); kc != nil {
			return kc
		}
	}
	if name := cd.Annotations[KubeconfigAnnotation]; name != "" {
		if kc, ok := r.route(name); ok {
			return kc
		}
	}
	if kc, ok := r.route(cd.Namespace + "/" + cd.Name); ok {
		return kc
	}
	if cd.Annotations[RegionalAnnotation] == "true" {
		if kc, ok := r.route(RouteRegional); ok {
			return kc
		}
	}
	kc, _ := r.route(RouteChild)
	return kc
}
