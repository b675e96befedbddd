package render

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// Resolver finds the bundle a reference names: a ConfigMap of the owner's
// namespace, a bundle of the registry, or a default. A ConfigMap bundle is
// loaded again only when the resourceVersion in the metadata cache changed,
// so a steady reconcile reads no ConfigMap. Safe for concurrent use.
type Resolver struct {
	*Registry
	// Cached reads ConfigMaps' metadata: the manager's cache.
	Cached client.Reader
	// Reader reads ConfigMaps' content: uncached, as few are bundles.
	Reader client.Reader

	mu     sync.Mutex
	loaded map[types.NamespacedName]loadedBundle
}

type loadedBundle struct {
	resourceVersion string
	bundle          *Bundle
}

// Resolve returns the bundle ref names for an owner in namespace, or the
// registry's bundle def when ref names none.
func (r *Resolver) Resolve(ctx context.Context, namespace string, ref *commonv1.BundleReference, def string) (*Bundle, error) {
	switch {
	case ref != nil && ref.ConfigMapRef != nil:
		return r.fromConfigMap(ctx, types.NamespacedName{Namespace: namespace, Name: ref.ConfigMapRef.Name})
	case ref != nil && ref.Name != "":
		return r.Get(ref.Name)
	default:
		return r.Get(def)
	}
}

func (r *Resolver) fromConfigMap(ctx context.Context, key types.NamespacedName) (*Bundle, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := r.Cached.Get(ctx, key, meta); err != nil {
		return nil, fmt.Errorf("bundle ConfigMap %s: %w", key, err)
	}
	r.mu.Lock()
	c, ok := r.loaded[key]
	r.mu.Unlock()
	if ok && c.resourceVersion == meta.ResourceVersion {
		return c.bundle, nil
	}
	cm := &corev1.ConfigMap{}
	if err := r.Reader.Get(ctx, key, cm); err != nil {
		return nil, fmt.Errorf("bundle ConfigMap %s: %w", key, err)
	}
	files := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	b, err := LoadFiles("configmap/"+key.String(), files)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.loaded == nil {
		r.loaded = map[types.NamespacedName]loadedBundle{}
	}
	r.loaded[key] = loadedBundle{resourceVersion: cm.ResourceVersion, bundle: b}
	r.mu.Unlock()
	return b, nil
}
