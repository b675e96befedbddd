package render

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Purpose is what a caller renders a bundle for. It fixes which objects the
// render may produce, whatever bundle renders it: a user bundle that
// replaces a built-in one, or one read from a ConfigMap, is confined exactly
// as the built-in one is.
type Purpose string

// Purposes, named after the built-in bundle that serves each by default.
const (
	// PurposeColonyCluster renders one Colony entry, in the Colony's namespace.
	PurposeColonyCluster Purpose = "colony-cluster"
	// PurposeWorkspaceServiceSet renders a WorkspaceDeployment's ServiceSet,
	// in its ClusterDeployment's namespace.
	PurposeWorkspaceServiceSet Purpose = "workspace-serviceset"
	// PurposeWorkspacePrerequisite renders a prerequisite's shared
	// ServiceSet, in its ClusterDeployment's namespace.
	PurposeWorkspacePrerequisite Purpose = "workspace-prerequisite"
	// PurposeWorkspaceRoutes renders a workspace's routes, for its regional
	// cluster, in the namespace ws-<workspace> of that cluster.
	PurposeWorkspaceRoutes Purpose = "workspace-routes"
	// PurposeRoutesKustomization renders the Flux Kustomization of a
	// regional cluster's routes, in the regional ClusterDeployment's
	// namespace.
	PurposeRoutesKustomization Purpose = "routes-kustomization"
)

// Errors a refused object wraps, inside an *Error of ReasonNotAllowed.
var (
	// ErrKindNotAllowed: the object's kind is not one the purpose renders.
	ErrKindNotAllowed = errors.New("kind not allowed")
	// ErrClusterScoped: the object has no namespace, and is not the one
	// cluster-scoped object the purpose may render.
	ErrClusterScoped = errors.New("cluster-scoped object not allowed")
	// ErrNamespaceNotAllowed: the object is in another namespace than the
	// request's.
	ErrNamespaceNotAllowed = errors.New("namespace not allowed")
)

var (
	gkConfigMap         = schema.GroupKind{Kind: "ConfigMap"}
	gkSecret            = schema.GroupKind{Kind: "Secret"}
	gkService           = schema.GroupKind{Kind: "Service"}
	gkNamespace         = schema.GroupKind{Kind: "Namespace"}
	gkClusterDeployment = schema.GroupKind{Group: "k0rdent.mirantis.com", Kind: "ClusterDeployment"}
	gkServiceSet        = schema.GroupKind{Group: "k0rdent.mirantis.com", Kind: "ServiceSet"}
	gkHTTPRoute         = schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}
	gkTCPRoute          = schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "TCPRoute"}
	gkKustomization     = schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}
)

// rule is what one purpose may render: namespaced kinds, all in the
// request's namespace, and, with ownNamespace, the Namespace object of that
// name (the only cluster-scoped object any purpose may render).
type rule struct {
	kinds        []schema.GroupKind
	ownNamespace bool
}

// rules holds the kinds of the built-in bundles, plus the ConfigMaps and
// Secrets a ClusterDeployment's or a ServiceSet's own bundle may put beside
// it (k0rdent reads Helm values and credentials from objects of its
// namespace). Routes go to a regional cluster's ws-<workspace> namespace,
// which their bundle creates.
var rules = map[Purpose]rule{
	PurposeColonyCluster:         {kinds: []schema.GroupKind{gkClusterDeployment, gkSecret, gkConfigMap}},
	PurposeWorkspaceServiceSet:   {kinds: []schema.GroupKind{gkServiceSet, gkSecret, gkConfigMap}},
	PurposeWorkspacePrerequisite: {kinds: []schema.GroupKind{gkServiceSet, gkSecret, gkConfigMap}},
	PurposeWorkspaceRoutes:       {kinds: []schema.GroupKind{gkService, gkHTTPRoute, gkTCPRoute}, ownNamespace: true},
	PurposeRoutesKustomization:   {kinds: []schema.GroupKind{gkKustomization}},
}

// serviceAccountTokenType is the Secret type that makes Kubernetes write a
// service account's token into the Secret.
const serviceAccountTokenType = "kubernetes.io/service-account-token"

// Confinement is what one render may produce.
type Confinement struct {
	// Purpose the render serves.
	Purpose Purpose
	// Namespace every namespaced object must be in: the request's.
	Namespace string
	// Kinds are the namespaced kinds allowed, of any version.
	Kinds []schema.GroupKind
	// OwnNamespace allows one cluster-scoped object: the Namespace named
	// Namespace.
	OwnNamespace bool
}

// ConfinementOf returns the confinement of a render for purpose p whose
// objects belong in namespace. It fails for an unknown purpose or an empty
// namespace.
func ConfinementOf(p Purpose, namespace string) (Confinement, error) {
	r, ok := rules[p]
	if !ok {
		return Confinement{}, fmt.Errorf("unknown render purpose %q", p)
	}
	if namespace == "" {
		return Confinement{}, fmt.Errorf("a %s render needs the namespace its objects belong in", p)
	}
	return Confinement{Purpose: p, Namespace: namespace, Kinds: append([]schema.GroupKind(nil), r.kinds...), OwnNamespace: r.ownNamespace}, nil
}

// Check returns nil when u is allowed, else an error wrapping
// ErrKindNotAllowed, ErrClusterScoped or ErrNamespaceNotAllowed.
func (c Confinement) Check(u *unstructured.Unstructured) error {
	gk := u.GroupVersionKind().GroupKind()
	ns := u.GetNamespace()
	if c.OwnNamespace && gk == gkNamespace && ns == "" && u.GetName() == c.Namespace {
		return nil
	}
	if !c.allows(gk) {
		if ns == "" {
			return notAllowed(ErrClusterScoped, "%s %s is cluster-scoped (it has no metadata.namespace): %s",
				gk.Kind, u.GetName(), c.describe())
		}
		return notAllowed(ErrKindNotAllowed, "%s %s/%s: %s", gk.Kind, ns, u.GetName(), c.describe())
	}
	if ns != c.Namespace {
		where := "has no metadata.namespace"
		if ns != "" {
			where = fmt.Sprintf("is in namespace %q", ns)
		}
		return notAllowed(ErrNamespaceNotAllowed, "%s %s %s: a %s bundle renders objects only in namespace %q",
			gk.Kind, u.GetName(), where, c.Purpose, c.Namespace)
	}
	if gk == gkSecret {
		if t, _, _ := unstructured.NestedString(u.Object, "type"); t == serviceAccountTokenType {
			return notAllowed(ErrKindNotAllowed, "Secret %s/%s: type %s is not allowed: Kubernetes would write a service account's token into it",
				ns, u.GetName(), serviceAccountTokenType)
		}
	}
	return nil
}

func (c Confinement) allows(gk schema.GroupKind) bool {
	for _, k := range c.Kinds {
		if k == gk {
			return true
		}
	}
	return false
}

// describe says what the confinement allows, for error messages.
func (c Confinement) describe() string {
	kinds := make([]string, 0, len(c.Kinds))
	for _, k := range c.Kinds {
		kinds = append(kinds, k.String())
	}
	s := fmt.Sprintf("a %s bundle renders only %s, in namespace %q", c.Purpose, strings.Join(kinds, ", "), c.Namespace)
	if c.OwnNamespace {
		s += fmt.Sprintf(", and the Namespace %q", c.Namespace)
	}
	return s
}

// detailError is an error message that wraps a sentinel error.
type detailError struct {
	sentinel error
	msg      string
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.sentinel }

func notAllowed(sentinel error, format string, args ...any) error {
	return &detailError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}
