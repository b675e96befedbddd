// Package impersonate reads objects of a namespace as a ServiceAccount of
// that namespace, as Flux's controllers do with serviceAccountName: what
// Apiary reads on behalf of a tenant (its workspaces' valuesFrom Secrets
// and ConfigMaps) is then only what the tenant's ServiceAccount may read.
package impersonate

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader is a client.Reader whose reads of a namespace's objects are made
// as the ServiceAccount Name of that namespace, uncached. Cluster-scoped
// reads are refused. Safe for concurrent use.
type Reader struct {
	// Config reaches the API server as the manager; impersonation is
	// added per namespace.
	Config *rest.Config
	Scheme *runtime.Scheme
	// Mapper maps kinds to resources: the manager's, shared.
	Mapper meta.RESTMapper
	// Name is the ServiceAccount of each namespace to read as.
	Name string

	mu      sync.Mutex
	clients map[string]client.Client
}

var _ client.Reader = (*Reader)(nil)

// User is the user name of the ServiceAccount name of namespace.
func User(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// Get reads an object of key's namespace as that namespace's ServiceAccount.
func (r *Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c, err := r.clientFor(key.Namespace)
	if err != nil {
		return err
	}
	return c.Get(ctx, key, obj, opts...)
}

// List lists objects of one namespace (client.InNamespace) as that
// namespace's ServiceAccount.
func (r *Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	c, err := r.clientFor(lo.Namespace)
	if err != nil {
		return err
	}
	return c.List(ctx, list, opts...)
}

// clientFor returns the client of a namespace's ServiceAccount, made once.
func (r *Reader) clientFor(namespace string) (client.Client, error) {
	if namespace == "" {
		return nil, fmt.Errorf("reading as a namespace's ServiceAccount %q: no namespace given", r.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[namespace]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: User(namespace, r.Name)}
	c, err := client.New(cfg, client.Options{Scheme: r.Scheme, Mapper: r.Mapper})
	if err != nil {
		return nil, fmt.Errorf("a client acting as %s: %w", User(namespace, r.Name), err)
	}
	if r.clients == nil {
		r.clients = map[string]client.Client{}
	}
	r.clients[namespace] = c
	return c, nil
}
