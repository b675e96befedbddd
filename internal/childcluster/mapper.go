package childcluster

import (
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// coreKinds are the core kinds Apiary reads and writes on child clusters
// (and their scope): every API server serves them at v1, so they are mapped
// without asking it.
var coreKinds = map[string]meta.RESTScope{
	"Namespace":      meta.RESTScopeRoot,
	"Node":           meta.RESTScopeRoot,
	"Pod":            meta.RESTScopeNamespace,
	"Service":        meta.RESTScopeNamespace,
	"Endpoints":      meta.RESTScopeNamespace,
	"ConfigMap":      meta.RESTScopeNamespace,
	"Secret":         meta.RESTScopeNamespace,
	"ServiceAccount": meta.RESTScopeNamespace,
}

// coreFirstMapper maps the core kinds statically and asks the cluster's
// discovery only for other kinds (the Gateway API's routes a regional
// cluster receives, kinds of user bundles). A child client that only
// creates a workspace's namespace therefore never builds a discovery
// mapper, which holds a copy of the whole cluster's discovery: about
// 300 KiB per child, a third of the manager's live heap at 50 clusters.
type coreFirstMapper struct {
	core *meta.DefaultRESTMapper

	cfg        *rest.Config
	httpClient *http.Client
	once       sync.Once
	discovered meta.RESTMapper
	err        error
}

var _ meta.RESTMapper = (*coreFirstMapper)(nil)

// coreMapper maps coreKinds. It is built once and only read (a
// DefaultRESTMapper is safe for concurrent reads), so every child client
// shares it instead of holding a copy of its own (about 6 KiB each).
var coreMapper = func() *meta.DefaultRESTMapper {
	core := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	for kind, scope := range coreKinds {
		core.Add(corev1.SchemeGroupVersion.WithKind(kind), scope)
	}
	return core
}()

func newCoreFirstMapper(cfg *rest.Config, httpClient *http.Client) *coreFirstMapper {
	return &coreFirstMapper{core: coreMapper, cfg: cfg, httpClient: httpClient}
}

// fallback is the discovery mapper, made on first use.
func (m *coreFirstMapper) fallback() (meta.RESTMapper, error) {
	m.once.Do(func() { m.discovered, m.err = apiutil.NewDynamicRESTMapper(m.cfg, m.httpClient) })
	return m.discovered, m.err
}

// either answers from the static core mapping, and from discovery when it
// does not know the kind or resource.
func either[T any](m *coreFirstMapper, core func(meta.RESTMapper) (T, error)) (T, error) {
	out, err := core(m.core)
	if err == nil || !meta.IsNoMatchError(err) {
		return out, err
	}
	d, ferr := m.fallback()
	if ferr != nil {
		var zero T
		return zero, ferr
	}
	return core(d)
}

func (m *coreFirstMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return either(m, func(x meta.RESTMapper) (schema.GroupVersionKind, error) { return x.KindFor(r) })
}

func (m *coreFirstMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return either(m, func(x meta.RESTMapper) ([]schema.GroupVersionKind, error) { return x.KindsFor(r) })
}

func (m *coreFirstMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return either(m, func(x meta.RESTMapper) (schema.GroupVersionResource, error) { return x.ResourceFor(r) })
}

func (m *coreFirstMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return either(m, func(x meta.RESTMapper) ([]schema.GroupVersionResource, error) { return x.ResourcesFor(r) })
}

func (m *coreFirstMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return either(m, func(x meta.RESTMapper) (*meta.RESTMapping, error) { return x.RESTMapping(gk, versions...) })
}

func (m *coreFirstMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return either(m, func(x meta.RESTMapper) ([]*meta.RESTMapping, error) { return x.RESTMappings(gk, versions...) })
}

func (m *coreFirstMapper) ResourceSingularizer(resource string) (string, error) {
	if out, err := m.core.ResourceSingularizer(resource); err == nil {
		return out, nil
	}
	d, err := m.fallback()
	if err != nil {
		return "", err
	}
	return d.ResourceSingularizer(resource)
}
