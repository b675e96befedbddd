package childcluster

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Current reads a child cluster, and maps its kinds, through whatever
// client the Manager holds for it at the time of each call: a reader and
// a REST mapper for long-lived users, such as the Git sink of a regional
// cluster's routes, that must follow a rotated kubeconfig.
type Current struct {
	m  *Manager
	cd types.NamespacedName
}

var (
	_ client.Reader   = (*Current)(nil)
	_ meta.RESTMapper = (*Current)(nil)
)

// Current returns the reader and REST mapper of the child of cd.
func (m *Manager) Current(cd types.NamespacedName) *Current { return &Current{m: m, cd: cd} }

// Get reads an object of the child.
func (c *Current) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cl, err := c.m.Client(ctx, c.cd)
	if err != nil {
		return err
	}
	return cl.Get(ctx, key, obj, opts...)
}

// List lists objects of the child.
func (c *Current) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	cl, err := c.m.Client(ctx, c.cd)
	if err != nil {
		return err
	}
	return cl.List(ctx, list, opts...)
}

// mapper is the REST mapper of the child's current client; the call that
// may read the kubeconfig is bounded by the Manager's timeout.
func (c *Current) mapper() (meta.RESTMapper, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.Timeout)
	defer cancel()
	cl, err := c.m.Client(ctx, c.cd)
	if err != nil {
		return nil, err
	}
	return cl.RESTMapper(), nil
}

// KindFor implements meta.RESTMapper.
func (c *Current) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m, err := c.mapper()
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return m.KindFor(resource)
}

// KindsFor implements meta.RESTMapper.
func (c *Current) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	m, err := c.mapper()
	if err != nil {
		return nil, err
	}
	return m.KindsFor(resource)
}

// ResourceFor implements meta.RESTMapper.
func (c *Current) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	m, err := c.mapper()
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.ResourceFor(input)
}

// ResourcesFor implements meta.RESTMapper.
func (c *Current) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	m, err := c.mapper()
	if err != nil {
		return nil, err
	}
	return m.ResourcesFor(input)
}

// RESTMapping implements meta.RESTMapper.
func (c *Current) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m, err := c.mapper()
	if err != nil {
		return nil, err
	}
	return m.RESTMapping(gk, versions...)
}

// RESTMappings implements meta.RESTMapper.
func (c *Current) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	m, err := c.mapper()
	if err != nil {
		return nil, err
	}
	return m.RESTMappings(gk, versions...)
}

// ResourceSingularizer implements meta.RESTMapper.
func (c *Current) ResourceSingularizer(resource string) (string, error) {
	m, err := c.mapper()
	if err != nil {
		return "", err
	}
	return m.ResourceSingularizer(resource)
}
