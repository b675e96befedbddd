package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
)

// ClusterLabel is set on every object rendered for a Colony entry, with the
// entry's clusterName.
const ClusterLabel = "infra.exalsius.ai/cluster"

// renderedCluster is the outcome of rendering one Colony entry.
type renderedCluster struct {
	entry   infrav1.ColonyCluster
	cdName  string
	objects []*unstructured.Unstructured
	err     error
	// state is what was observed of the entry's ClusterDeployment.
	state infrav1.ColonyClusterStatus
}

// renderedColony is the outcome of rendering every entry of a Colony.
type renderedColony struct {
	clusters []renderedCluster
	failed   []string
	// applyErr is the sink's error, naming the objects it could not apply.
	applyErr error
}

func (rc *renderedColony) objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, c := range rc.clusters {
		out = append(out, c.objects...)
	}
	return out
}

// renderClusters renders every entry through its bundle. An entry that fails
// to render is reported and skipped; the others proceed.
func (r *ColonyReconciler) renderClusters(ctx context.Context, obj *infrav1.Colony) *renderedColony {
	out := &renderedColony{}
	for _, entry := range obj.Spec.ColonyClusters {
		// As in the exalsius operator, an entry without a spec creates nothing,
		// unless it names a bundle or values that can build one.
		if entry.ClusterDeploymentSpec == nil && entry.Values == nil && entry.Bundle == nil {
			continue
		}
		rc := renderedCluster{entry: entry, cdName: naming.ClusterDeploymentName(obj.Name, entry.ClusterName)}
		rc.objects, rc.err = r.renderCluster(ctx, obj, entry, rc.cdName)
		if rc.err != nil {
			out.failed = append(out.failed, fmt.Sprintf("cluster %q: %s", entry.ClusterName, rc.err))
		}
		out.clusters = append(out.clusters, rc)
	}
	if len(out.failed) > 0 {
		msg := strings.Join(out.failed, "; ")
		conditions.MarkFalse(obj, commonv1.RenderedCondition, commonv1.RenderFailedReason, "%s", msg)
	} else {
		conditions.MarkTrue(obj, commonv1.RenderedCondition, commonv1.SucceededReason, "%d clusters rendered", len(out.clusters))
	}
	return out
}

func (r *ColonyReconciler) renderCluster(ctx context.Context, obj *infrav1.Colony, entry infrav1.ColonyCluster, cdName string) ([]*unstructured.Unstructured, error) {
	bundle, err := r.bundleFor(ctx, obj.Namespace, entry.Bundle, render.ColonyClusterBundle)
	if err != nil {
		return nil, err
	}
	req, err := render.ColonyClusterRequest(obj, &entry, cdName, r.Settings)
	if err != nil {
		return nil, err
	}
	output, err := bundle.Render(req)
	if err != nil {
		return nil, err
	}
	for _, o := range output.Objects {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[infrav1.ColonyLabel] = naming.LabelValue(obj.Name)
		labels[ClusterLabel] = naming.LabelValue(entry.ClusterName)
		o.SetLabels(labels)
		if o.GetNamespace() == obj.Namespace {
			if err := controllerutil.SetControllerReference(obj, o, r.Scheme()); err != nil {
				return nil, fmt.Errorf("owning %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return output.Objects, nil
}

// bundleFor resolves a bundle reference: a ConfigMap in namespace, a named
// bundle of the registry, or the default.
func (r *ColonyReconciler) bundleFor(ctx context.Context, namespace string, ref *commonv1.BundleReference, def string) (*render.Bundle, error) {
	return resolveBundle(ctx, r.Client, r.APIReader, r.Bundles, namespace, ref, def)
}

// configMapBundles keeps the bundles loaded from ConfigMaps by their
// resourceVersion, read from the metadata cache, so a ConfigMap is read from
// the API server only when it changed.
var configMapBundles = struct {
	sync.Mutex
	m map[client.ObjectKey]cachedBundle
}{m: map[client.ObjectKey]cachedBundle{}}

type cachedBundle struct {
	resourceVersion string
	bundle          *render.Bundle
}

func resolveBundle(ctx context.Context, cached, reader client.Reader, reg *render.Registry, namespace string,
	ref *commonv1.BundleReference, def string) (*render.Bundle, error) {
	switch {
	case ref != nil && ref.ConfigMapRef != nil:
		key := client.ObjectKey{Namespace: namespace, Name: ref.ConfigMapRef.Name}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		if err := cached.Get(ctx, key, meta); err != nil {
			return nil, fmt.Errorf("bundle ConfigMap %s: %w", key, err)
		}
		configMapBundles.Lock()
		c, ok := configMapBundles.m[key]
		configMapBundles.Unlock()
		if ok && c.resourceVersion == meta.ResourceVersion {
			return c.bundle, nil
		}
		cm := &corev1.ConfigMap{}
		if err := reader.Get(ctx, key, cm); err != nil {
			return nil, fmt.Errorf("bundle ConfigMap %s: %w", key, err)
		}
		files := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
		for k, v := range cm.Data {
			files[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			files[k] = v
		}
		b, err := render.LoadFiles("configmap/"+key.String(), files)
		if err != nil {
			return nil, err
		}
		configMapBundles.Lock()
		configMapBundles.m[key] = cachedBundle{resourceVersion: cm.ResourceVersion, bundle: b}
		configMapBundles.Unlock()
		return b, nil
	case ref != nil && ref.Name != "":
		return reg.Get(ref.Name)
	default:
		return reg.Get(def)
	}
}
