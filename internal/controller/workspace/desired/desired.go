// Package desired renders what the workspace controller delivers for a
// workspace: the class's defaults merged with the workspace's values and
// valuesFrom objects, its resources injected, through the class's bundle.
// A rendering is kept, encoded, until one of its inputs changes, so a
// steady reconcile neither reads values Secrets nor renders again.
package desired

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/request"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// Set is what a workspace's bundle rendered, with its digest.
type Set struct {
	fingerprint string
	// Digest identifies the objects.
	Digest string
	// Objects are the rendered objects: the ServiceSet and its values Secret.
	Objects []*unstructured.Unstructured
	// Injected lists the user's values the resources injection overwrote.
	Injected []values.Overwrite
}

// encodeSet is d as the render cache keeps it.
func encodeSet(d *Set) (*renderedSet, error) {
	e := &renderedSet{fingerprint: d.fingerprint, digest: d.Digest, injected: d.Injected,
		objects: make([][]byte, len(d.Objects))}
	for i, o := range d.Objects {
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
func (e *renderedSet) decode() (*Set, error) {
	d := &Set{fingerprint: e.fingerprint, Digest: e.digest, Injected: e.injected,
		Objects: make([]*unstructured.Unstructured, len(e.objects))}
	for i, data := range e.objects {
		m := map[string]any{}
		if err := utiljson.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("decoding a rendered object: %w", err)
		}
		d.Objects[i] = &unstructured.Unstructured{Object: m}
	}
	return d, nil
}

// Desired returns the workspace's rendered objects: from the cache when the
// inputs did not change, else merged, injected and rendered anew. Both come
// decoded from the cache's encoding, so that a first rendering and a cached
// one are the same objects.
func (r *Renderer) Desired(ctx context.Context, w Input) (*Set, *Problem, error) {
	obj := w.Obj
	fp, err := r.fingerprint(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	key := client.ObjectKeyFromObject(obj)
	e := r.rendered.get(key, fp)
	if e == nil {
		d, problem, err := r.render(ctx, w)
		if err != nil || problem != nil {
			return nil, problem, err
		}
		d.fingerprint = fp
		if e, err = encodeSet(d); err != nil {
			return nil, nil, err
		}
		r.rendered.put(key, e)
	} else {
		// A cached rendering says again what rendering it said of the
		// workspace, so that a status not written since (the first
		// delivery's held write) does not lose it; it is unchanged otherwise.
		conditions.MarkTrue(obj, workspacesv1.ConfigResolvedCondition, workspacesv1.ConfigResolvedReason, "values resolved")
		markInjected(obj, e.injected)
	}
	d, err := e.decode()
	if err != nil {
		return nil, nil, err
	}
	return d, nil, nil
}

// fingerprint hashes every input of the rendering, reading the values
// Secrets and ConfigMaps only through their cached metadata.
func (r *Renderer) fingerprint(ctx context.Context, w Input) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode([]any{w.Obj.UID, w.Obj.Generation, w.Class.UID, w.Class.Generation, w.CDKey.String(), w.Resolved, request.Of(w.Resolved).Selector})
	for _, ref := range w.Obj.Spec.ValuesFrom {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: w.Obj.Namespace, Name: ref.Name}, meta)
		if client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
		_ = enc.Encode([]string{ref.Kind, ref.Name, meta.ResourceVersion})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// render resolves the workspace's values (class defaults, values,
// valuesFrom, secrets apart, resources injected) and renders its bundle.
func (r *Renderer) render(ctx context.Context, w Input) (*Set, *Problem, error) {
	obj, class := w.Obj, w.Class
	fetch := func(ref workspacesv1.ValuesReference) ([]byte, bool, error) {
		return r.valuesContent(ctx, obj.Namespace, ref)
	}
	resolved, err := plan.ResolveValues(class, obj, w.Resolved, plan.Placement(w.Resolved), fetch)
	var fieldErr *plan.FieldError
	switch {
	case errors.As(err, &fieldErr) && (fieldErr.Reason == workspacesv1.ValuesFromNotFoundReason ||
		fieldErr.Reason == workspacesv1.ValuesFromForbiddenReason):
		// The Secret or ConfigMap may still come, or be granted: wait for it.
		conditions.MarkFalse(obj, workspacesv1.ConfigResolvedCondition, fieldErr.Reason, "%s", fieldErr.Error())
		return nil, &Problem{Wait: true, Reason: fieldErr.Reason, Message: fieldErr.Error()}, nil
	case errors.As(err, &fieldErr):
		return nil, configFailed(obj, fieldErr.Reason, fieldErr.Error()), nil
	case err != nil:
		return nil, nil, err
	}
	conditions.MarkTrue(obj, workspacesv1.ConfigResolvedCondition, workspacesv1.ConfigResolvedReason, "values resolved")
	markInjected(obj, resolved.Overwritten)
	objects, digest, err := r.renderBundle(ctx, w, resolved)
	if err != nil {
		problem, err := renderFailed(obj, err)
		return nil, problem, err
	}
	return &Set{Digest: digest, Objects: objects, Injected: resolved.Overwritten}, nil, nil
}

func markInjected(obj *workspacesv1.WorkspaceDeployment, overwritten []values.Overwrite) {
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

// renderFailed sorts out a failed render. One that timed out (a busy
// manager, or a reconcile cancelled) is returned as an error, for the
// reconcile to retry with backoff; any other *render.Error is the bundle's
// or the values' fault, and fails the workspace.
func renderFailed(obj *workspacesv1.WorkspaceDeployment, err error) (*Problem, error) {
	var rerr *render.Error
	switch {
	case errors.Is(err, render.ErrTimeout):
		return nil, fmt.Errorf("rendering the workspace: %w", err)
	case errors.As(err, &rerr):
		return configFailed(obj, commonv1.RenderFailedReason, err.Error()), nil
	}
	return nil, err
}

// configFailed is a problem of the workspace's configuration: it fails.
func configFailed(obj *workspacesv1.WorkspaceDeployment, reason, msg string) *Problem {
	conditions.MarkFalse(obj, workspacesv1.ConfigResolvedCondition, reason, "%s", msg)
	return &Problem{Reason: reason, Message: msg}
}

// valuesContent reads one valuesFrom key, uncached.
func (r *Renderer) valuesContent(ctx context.Context, namespace string, ref workspacesv1.ValuesReference) ([]byte, bool, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	switch ref.Kind {
	case "Secret":
		s := &corev1.Secret{}
		if err := r.APIReader.Get(ctx, key, s); err != nil {
			return nil, false, readError("Secret", key, err)
		}
		v, ok := s.Data[plan.ValuesKey(ref)]
		return v, ok, nil
	default:
		cm := &corev1.ConfigMap{}
		if err := r.APIReader.Get(ctx, key, cm); err != nil {
			return nil, false, readError("ConfigMap", key, err)
		}
		if v, ok := cm.Data[plan.ValuesKey(ref)]; ok {
			return []byte(v), true, nil
		}
		v, ok := cm.BinaryData[plan.ValuesKey(ref)]
		return v, ok, nil
	}
}

// readError is what reading a valuesFrom object failed with: nil for one
// that does not exist (the caller reports it missing), plan.ErrSourceForbidden
// for one the reader may not read, else an error to retry.
func readError(kind string, key client.ObjectKey, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w (%s)", plan.ErrSourceForbidden, reconciler.Truncate(err.Error(), 256))
	}
	return fmt.Errorf("reading %s %s: %w", kind, key, err)
}

// renderBundle renders the workspace's ServiceSet (and values Secret).
func (r *Renderer) renderBundle(ctx context.Context, w Input, v *plan.Values) ([]*unstructured.Unstructured, string, error) {
	obj, class := w.Obj, w.Class
	bundle, err := r.Bundles.Resolve(ctx, plan.BundleNamespace(class), class.Spec.Bundle, render.WorkspaceServiceSetBundle)
	if err != nil {
		return nil, "", err
	}
	req, err := plan.ServiceSetRequest(class, obj, w.CDKey.Name, w.CDKey.Namespace, v, r.Settings)
	if err != nil {
		return nil, "", err
	}
	out, err := bundle.RenderContext(ctx, req)
	if err != nil {
		return nil, "", err
	}
	for _, o := range out.Objects {
		if o.GetNamespace() == obj.Namespace {
			if err := controllerutil.SetControllerReference(obj, o, r.Scheme); err != nil {
				return nil, "", fmt.Errorf("owning %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return out.Objects, out.Digest(), nil
}

// Renderer renders workspaces. Set its fields before the first call; it is
// safe for concurrent use.
type Renderer struct {
	// Reader reads values objects' metadata and ServiceSets: the cache.
	Reader client.Reader
	// APIReader reads values Secrets and ConfigMaps, uncached.
	APIReader client.Reader
	// Bundles resolves the classes' bundles.
	Bundles *render.Resolver
	// Settings are passed to bundles as .Input.operator.
	Settings map[string]any
	// Scheme sets the workspace as the controller of objects in its namespace.
	Scheme *runtime.Scheme

	rendered renderCache
}

// Input is the workspace to render, as the earlier steps resolved it.
type Input struct {
	Obj      *workspacesv1.WorkspaceDeployment
	Class    *workspacesv1.WorkspaceClass
	CDKey    types.NamespacedName
	Resolved workspacesv1.WorkspaceResourceSpec
}

// Problem is a configuration the workspace cannot be rendered with: one to
// wait for (a valuesFrom object that may still come), or one that fails it.
// Reason and Message say which; ConfigResolved is set already.
type Problem struct {
	Wait            bool
	Reason, Message string
}

// Forget drops the rendering of a workspace that is gone.
func (r *Renderer) Forget(key types.NamespacedName) { r.rendered.forget(key) }
