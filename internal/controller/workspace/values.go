package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// desiredSet is what a workspace's bundle rendered, with its digest.
type desiredSet struct {
	fingerprint string
	digest      string
	objects     []*unstructured.Unstructured
	injected    []values.Overwrite
}

// encodeSet is d as the render cache keeps it.
func encodeSet(d *desiredSet) (*renderedSet, error) {
	e := &renderedSet{fingerprint: d.fingerprint, digest: d.digest, injected: d.injected,
		objects: make([][]byte, len(d.objects))}
	for i, o := range d.objects {
		data, err := json.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding the rendered %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		e.objects[i] = data
	}
	return e, nil
}

// decode returns new objects, decoded as the renderer decodes its output
// (whole numbers as int64), for the caller to change.
func (e *renderedSet) decode() (*desiredSet, error) {
	d := &desiredSet{fingerprint: e.fingerprint, digest: e.digest, injected: e.injected,
		objects: make([]*unstructured.Unstructured, len(e.objects))}
	for i, data := range e.objects {
		m := map[string]any{}
		if err := utiljson.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("decoding a rendered object: %w", err)
		}
		d.objects[i] = &unstructured.Unstructured{Object: m}
	}
	return d, nil
}

// desired returns the workspace's rendered objects: from the cache when the
// inputs did not change, else merged, injected and rendered anew. Both come
// decoded from the cache's encoding, so that a first rendering and a cached
// one are the same objects.
func (r *Reconciler) desired(ctx context.Context, w *workspaceRun) (*desiredSet, stepResult, error) {
	obj := w.obj
	fp, err := r.fingerprint(ctx, w)
	if err != nil {
		return nil, stopWith(0), err
	}
	key := client.ObjectKeyFromObject(obj)
	e := r.rendered.get(key, fp)
	if e == nil {
		d, res, err := r.render(ctx, w)
		if err != nil || res.stop {
			return nil, res, err
		}
		d.fingerprint = fp
		if e, err = encodeSet(d); err != nil {
			return nil, stopWith(0), err
		}
		r.rendered.put(key, e)
	}
	d, err := e.decode()
	if err != nil {
		return nil, stopWith(0), err
	}
	return d, proceed, nil
}

// fingerprint hashes every input of the rendering, reading the values
// Secrets and ConfigMaps only through their cached metadata.
func (r *Reconciler) fingerprint(ctx context.Context, w *workspaceRun) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode([]any{w.obj.UID, w.obj.Generation, w.class.UID, w.class.Generation, w.cdKey.String(), w.resolved, w.selector})
	for _, ref := range w.obj.Spec.ValuesFrom {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
		err := r.Get(ctx, client.ObjectKey{Namespace: w.obj.Namespace, Name: ref.Name}, meta)
		if client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
		_ = enc.Encode([]string{ref.Kind, ref.Name, meta.ResourceVersion})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// render resolves the workspace's values (class defaults, values,
// valuesFrom, secrets apart, resources injected) and renders its bundle.
func (r *Reconciler) render(ctx context.Context, w *workspaceRun) (*desiredSet, stepResult, error) {
	obj, class := w.obj, w.class
	fetch := func(ref workspacesv1.ValuesReference) ([]byte, bool, error) {
		return r.valuesContent(ctx, obj.Namespace, ref)
	}
	resolved, err := plan.ResolveValues(class, obj, w.resolved, plan.Placement(w.resolved, w.selector, w.demand), fetch)
	var fieldErr *plan.FieldError
	switch {
	case errors.As(err, &fieldErr) && fieldErr.Reason == "ValuesFromNotFound":
		// The Secret or ConfigMap may still come: wait for it.
		conditions.MarkFalse(obj, workspacesv1.ConfigResolvedCondition, fieldErr.Reason, "%s", fieldErr.Error())
		pending(obj, "%s", fieldErr.Error())
		return nil, stopWith(30 * time.Second), nil
	case errors.As(err, &fieldErr):
		return nil, r.configFailed(ctx, obj, fieldErr.Reason, fieldErr.Error()), nil
	case err != nil:
		return nil, stopWith(0), err
	}
	conditions.MarkTrue(obj, workspacesv1.ConfigResolvedCondition, "ConfigResolved", "values resolved")
	r.markInjected(obj, resolved.Overwritten)
	objects, digest, err := r.renderBundle(ctx, w, resolved)
	if err != nil {
		if _, ok := err.(*render.Error); ok {
			return nil, r.configFailed(ctx, obj, "RenderFailed", err.Error()), nil
		}
		return nil, stopWith(0), err
	}
	return &desiredSet{digest: digest, objects: objects, injected: resolved.Overwritten}, proceed, nil
}

func (r *Reconciler) markInjected(obj *workspacesv1.WorkspaceDeployment, overwritten []values.Overwrite) {
	if len(overwritten) == 0 {
		conditions.MarkTrue(obj, workspacesv1.ResourcesInjectedCondition, workspacesv1.ResourcesInjectedReason, "resources injected")
		return
	}
	msgs := make([]string, 0, len(overwritten))
	for _, o := range overwritten {
		msgs = append(msgs, o.String())
	}
	conditions.MarkFalse(obj, workspacesv1.ResourcesInjectedCondition, workspacesv1.UserPathsOverwrittenReason, "%s", strings.Join(msgs, "; "))
}

// configFailed fails the workspace for a problem of its configuration.
func (r *Reconciler) configFailed(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, reason, msg string) stepResult {
	conditions.MarkFalse(obj, workspacesv1.ConfigResolvedCondition, reason, "%s", msg)
	r.fail(ctx, obj, reason, msg)
	return stopWith(0)
}

// valuesContent reads one valuesFrom key, uncached.
func (r *Reconciler) valuesContent(ctx context.Context, namespace string, ref workspacesv1.ValuesReference) ([]byte, bool, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	switch ref.Kind {
	case "Secret":
		s := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, key, s); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		v, ok := s.Data[plan.ValuesKey(ref)]
		return v, ok, nil
	default:
		cm := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, key, cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("reading ConfigMap %s: %w", key, err)
		}
		if v, ok := cm.Data[plan.ValuesKey(ref)]; ok {
			return []byte(v), true, nil
		}
		v, ok := cm.BinaryData[plan.ValuesKey(ref)]
		return v, ok, nil
	}
}

// renderBundle renders the workspace's ServiceSet (and values Secret).
func (r *Reconciler) renderBundle(ctx context.Context, w *workspaceRun, v *plan.Values) ([]*unstructured.Unstructured, string, error) {
	obj, class := w.obj, w.class
	bundle, err := r.Bundles.Resolve(ctx, plan.BundleNamespace(class), class.Spec.Bundle, render.WorkspaceServiceSetBundle)
	if err != nil {
		return nil, "", err
	}
	req, err := plan.ServiceSetRequest(class, obj, w.cdKey.Name, w.cdKey.Namespace, v, r.Settings)
	if err != nil {
		return nil, "", err
	}
	out, err := bundle.Render(req)
	if err != nil {
		return nil, "", err
	}
	for _, o := range out.Objects {
		if o.GetNamespace() == obj.Namespace {
			if err := controllerutil.SetControllerReference(obj, o, r.Scheme()); err != nil {
				return nil, "", fmt.Errorf("owning %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return out.Objects, out.Digest(), nil
}
