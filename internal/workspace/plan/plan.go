// Package plan derives what Apiary renders for a workspace — its names,
// timeouts, Helm values and bundle inputs — from a WorkspaceClass and a
// WorkspaceDeployment. The controller and `apiary render` both use it, so
// what the offline command prints is what the controller delivers.
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/workspace/request"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// Names and labels of what Apiary creates for workspaces.
const (
	// PrerequisiteBundle renders the shared prerequisite ServiceSets.
	PrerequisiteBundle = "workspace-prerequisite"
	// DefaultPrerequisiteNamespace is where a prerequisite installs when its class says nothing.
	DefaultPrerequisiteNamespace = "default"
	// DefaultDeployTimeout bounds a release's install when the class sets none.
	DefaultDeployTimeout = 15 * time.Minute

	RoleLabel                 = "workspaces.exalsius.ai/role"
	RolePrerequisite          = "prerequisite"
	PrerequisiteClusterLabel  = "workspaces.exalsius.ai/cluster-deployment"
	PrerequisiteTemplateLabel = "workspaces.exalsius.ai/template"
)

// ServiceSetName is the name of a workspace's ServiceSet.
func ServiceSetName(cluster, workspace string) string {
	return naming.Bounded("wsd-" + cluster + "-" + workspace)
}

// ReleaseName is a workspace's Helm release (and ServiceSet entry), bounded
// to Helm's 53 characters.
func ReleaseName(cluster, workspace string) string {
	return naming.BoundedTo("wsd-"+cluster+"-"+workspace, 53)
}

// ChildNamespace is a workspace's namespace on the child cluster.
func ChildNamespace(workspace string) string { return "ws-" + workspace }

// ValuesSecretName is the Secret that carries a workspace's secret values.
func ValuesSecretName(cluster, workspace string) string {
	return naming.Bounded(ServiceSetName(cluster, workspace) + "-values")
}

// PrerequisiteServiceSetName is the shared ServiceSet of a prerequisite on a cluster.
func PrerequisiteServiceSetName(cluster, template string) string {
	return naming.Bounded("wsprereq-" + cluster + "-" + template)
}

// DeployTimeout is the class's deployTimeout, 15m by default.
func DeployTimeout(class *workspacesv1.WorkspaceClass) time.Duration {
	if class.Spec.DeployTimeout != nil && class.Spec.DeployTimeout.Duration > 0 {
		return class.Spec.DeployTimeout.Duration
	}
	return DefaultDeployTimeout
}

// PrerequisiteTimeout is prerequisiteDeployTimeout, else deployTimeout, else 15m.
func PrerequisiteTimeout(class *workspacesv1.WorkspaceClass) time.Duration {
	if class.Spec.PrerequisiteDeployTimeout != nil && class.Spec.PrerequisiteDeployTimeout.Duration > 0 {
		return class.Spec.PrerequisiteDeployTimeout.Duration
	}
	return DeployTimeout(class)
}

// ValuesKey is the data key a valuesFrom entry reads.
func ValuesKey(ref workspacesv1.ValuesReference) string {
	if ref.ValuesKey != "" {
		return ref.ValuesKey
	}
	return "values.yaml"
}

// JSONToMap decodes an optional JSON object.
func JSONToMap(v *apiextensionsv1.JSON) (map[string]any, error) {
	if v == nil || len(v.Raw) == 0 || string(v.Raw) == "null" {
		return nil, nil
	}
	out := map[string]any{}
	if err := json.Unmarshal(v.Raw, &out); err != nil {
		return nil, fmt.Errorf("must be a JSON object: %w", err)
	}
	return out, nil
}

// FieldError is a problem of a workspace's configuration, at a field.
type FieldError struct {
	// Field is the path of the field, e.g. spec.valuesFrom[0].
	Field string
	// Reason is a condition reason for it.
	Reason string
	// Message says what is wrong.
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ErrSourceUnavailable, from a Fetch, means a valuesFrom object cannot be
// read at all (offline); Values then leaves it out and records it.
var ErrSourceUnavailable = errors.New("values source unavailable")

// ErrSourceForbidden, from a Fetch, means the reader may not read a
// valuesFrom object; the workspace waits until it may.
var ErrSourceForbidden = errors.New("values source forbidden")

// Fetch returns the content of one valuesFrom key and whether it exists.
type Fetch func(ref workspacesv1.ValuesReference) (content []byte, found bool, err error)

// Values is a workspace's resolved Helm values.
type Values struct {
	// Public values go into the ServiceSet.
	Public map[string]any
	// Secret values go into a Secret the ServiceSet references.
	Secret map[string]any
	// Overwritten lists user values that resource injection replaced.
	Overwritten []values.Overwrite
	// Unavailable lists the valuesFrom fields left out (ErrSourceUnavailable).
	Unavailable []string
}

// ResolveValues merges the class's defaults with the workspace's values and
// valuesFrom, keeps secret-typed values apart, checks required values and
// injects the resolved resources. Problems of the configuration are
// *FieldError; other errors come from fetch.
func ResolveValues(class *workspacesv1.WorkspaceClass, obj *workspacesv1.WorkspaceDeployment,
	resolved workspacesv1.WorkspaceResourceSpec, placement values.GPUPlacement, fetch Fetch) (*Values, error) {
	classValues, err := JSONToMap(class.Spec.DefaultValues)
	if err != nil {
		return nil, &FieldError{Field: "spec.defaultValues of the class", Reason: workspacesv1.ValuesInvalidReason, Message: err.Error()}
	}
	if path, ok := values.ReservedPath(classValues); ok {
		// A class the controller validated before it refused such values.
		return nil, reservedError("spec.defaultValues of the class", "WorkspaceClass "+class.Name, path)
	}
	classValues = values.MarkVerbatim(classValues)
	userValues, err := JSONToMap(obj.Spec.Values)
	if err != nil {
		return nil, &FieldError{Field: "spec.values", Reason: workspacesv1.ValuesInvalidReason, Message: err.Error()}
	}
	if path, ok := values.ReservedPath(userValues); ok {
		return nil, reservedError("spec.values", "the inline values", path)
	}
	public, secret, err := values.SplitSecrets(values.MergeValues(classValues, userValues), class.Spec.UserFacingConfig)
	if err != nil {
		return nil, &FieldError{Field: "spec.values", Reason: workspacesv1.ValuesInvalidReason, Message: err.Error()}
	}
	out := &Values{}
	budget := values.NewBudget()
	for i, ref := range obj.Spec.ValuesFrom {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		content, found, err := fetch(ref)
		switch {
		case errors.Is(err, ErrSourceUnavailable):
			out.Unavailable = append(out.Unavailable, field)
			continue
		case errors.Is(err, ErrSourceForbidden):
			return nil, &FieldError{Field: field, Reason: workspacesv1.ValuesFromForbiddenReason,
				Message: fmt.Sprintf("%s %s/%s may not be read: %s", ref.Kind, obj.Namespace, ref.Name, err)}
		case err != nil:
			return nil, err
		case !found && ref.Optional:
			continue
		case !found:
			return nil, &FieldError{Field: field, Reason: workspacesv1.ValuesFromNotFoundReason,
				Message: fmt.Sprintf("%s %s/%s has no key %q", ref.Kind, obj.Namespace, ref.Name, ValuesKey(ref))}
		}
		target := &public
		if ref.Kind == "Secret" {
			target = &secret
		}
		merged, err := values.MergeFromBudget(*target, content, ref.TargetPath, budget)
		if err != nil {
			return nil, &FieldError{Field: field, Reason: workspacesv1.ValuesInvalidReason,
				Message: fmt.Sprintf("%s %s/%s (key %q): %s", ref.Kind, obj.Namespace, ref.Name, ValuesKey(ref), err)}
		}
		// Neither tree held a reserved key before: this source set it.
		if path, ok := values.ReservedPath(merged); ok {
			return nil, reservedError(field, fmt.Sprintf("%s %s (key %q)", ref.Kind, ref.Name, ValuesKey(ref)), path)
		}
		*target = merged
	}
	if missing := values.CheckRequired(public, secret, class.Spec.UserFacingConfig); len(missing) > 0 && len(out.Unavailable) == 0 {
		return nil, &FieldError{Field: "spec.values", Reason: workspacesv1.RequiredConfigMissingReason,
			Message: fmt.Sprintf("required values missing: %s (set them in spec.values or spec.valuesFrom)", strings.Join(missing, ", "))}
	}
	if public == nil {
		public = map[string]any{}
	}
	injected, err := values.Inject(public, resolved, placement, class.Spec.ResourceInjection)
	if err != nil {
		return nil, &FieldError{Field: "spec.resourceInjection of the class", Reason: workspacesv1.InvalidResourceInjectionReason, Message: err.Error()}
	}
	// Sveltos merges the secret values over the public ones: where they
	// reach an injection path, they give the chart what was admitted too.
	admission, err := values.NewAdmission(resolved, placement, class.Spec.ResourceInjection)
	if err != nil {
		return nil, &FieldError{Field: "spec.resourceInjection of the class", Reason: workspacesv1.InvalidResourceInjectionReason, Message: err.Error()}
	}
	out.Public, out.Secret = public, secret
	out.Overwritten = append(injected.Overwritten, admission.Enforce(secret)...)
	return out, nil
}

// Placement is what injection learns of the GPU placement: the gated selector,
// and for a workspace that asks for GPUs, its vendor and extended resource.
func Placement(resolved workspacesv1.WorkspaceResourceSpec) values.GPUPlacement {
	req := request.Of(resolved)
	p := values.GPUPlacement{NodeSelector: req.Selector}
	if req.HasGPUs() {
		// An unknown vendor leaves the resource to injection, which refuses it.
		p.Vendor = req.Vendor
		p.ResourceName, _ = gpu.ResourceFor(req.Vendor)
	}
	return p
}

// ServiceSetRequest is the render request of a workspace's bundle.
func ServiceSetRequest(class *workspacesv1.WorkspaceClass, obj *workspacesv1.WorkspaceDeployment, clusterName, clusterNamespace string,
	v *Values, operator map[string]any) (render.Request, error) {
	valuesJSON, err := values.Marshal(v.Public)
	if err != nil {
		return render.Request{}, fmt.Errorf("encoding values: %w", err)
	}
	var valuesSecret any
	if len(v.Secret) > 0 {
		doc, err := values.MarshalSecret(v.Secret)
		if err != nil {
			return render.Request{}, err // never quotes a value
		}
		valuesSecret = map[string]any{"name": ValuesSecretName(clusterName, obj.Name), "values": doc}
	}
	labels := make(map[string]any, len(obj.Labels))
	for k, val := range obj.Labels {
		labels[k] = val
	}
	release := ReleaseName(clusterName, obj.Name)
	return render.Request{Purpose: render.PurposeWorkspaceServiceSet, ReleaseName: release, Namespace: clusterNamespace, Input: map[string]any{
		"workspace": map[string]any{"name": obj.Name, "namespace": obj.Namespace, "uid": string(obj.UID), "labels": labels},
		"class": map[string]any{"name": class.Name, "serviceTemplate": map[string]any{
			"name": class.Spec.ServiceTemplate.Name, "namespace": class.Spec.ServiceTemplate.Namespace}},
		"cluster":          map[string]any{"name": clusterName, "namespace": clusterNamespace},
		"serviceSetName":   ServiceSetName(clusterName, obj.Name),
		"releaseName":      release,
		"releaseNamespace": ChildNamespace(obj.Name),
		"serviceTemplate":  class.Spec.ServiceTemplate.Name,
		"values":           valuesJSON,
		"valuesSecret":     valuesSecret,
		"helm":             map[string]any{"wait": true, "timeout": DeployTimeout(class).String()},
		"provider":         map[string]any{"name": k0rdentv1beta1.DefaultStateManagementProviderName},
		"labels":           map[string]any{},
		"operator":         operator,
	}}, nil
}

// PrerequisiteTarget is where the shared install of a prerequisite lives:
// its ServiceSet, and the name and namespace of its release on the child.
type PrerequisiteTarget struct {
	ServiceSet, Release, Namespace string
}

// NewPrerequisiteTarget is the target of a new install of a template on a
// cluster, into namespace: the ServiceSet wsprereq-<cluster>-<template> and
// the release named after the template (lowercased, bounded to 53
// characters; prereq-<hash> when that is no DNS label). An upgrade keeps
// the target of the install it upgrades.
func NewPrerequisiteTarget(cluster, template, namespace string) PrerequisiteTarget {
	release := strings.ToLower(template)
	if !naming.IsDNSLabel(release) {
		release = naming.LabelValue("prereq-" + template)
	}
	return PrerequisiteTarget{
		ServiceSet: PrerequisiteServiceSetName(cluster, template),
		Release:    naming.BoundedTo(release, 53),
		Namespace:  namespace,
	}
}

// PrerequisiteRequest is the render request of a prerequisite's shared
// ServiceSet on a cluster, installing the class's template at target.
func PrerequisiteRequest(class *workspacesv1.WorkspaceClass, p workspacesv1.PrerequisiteSpec, clusterName, clusterNamespace string,
	target PrerequisiteTarget, operator map[string]any) (render.Request, error) {
	tmpl := p.ServiceTemplate.Name
	vals, err := JSONToMap(p.Values)
	if err != nil {
		return render.Request{}, fmt.Errorf("values of prerequisite %q: %w", tmpl, err)
	}
	// The class administrator's values: templates stay templates.
	valuesJSON, err := values.Marshal(values.MarkVerbatim(vals))
	if err != nil {
		return render.Request{}, fmt.Errorf("values of prerequisite %q: %w", tmpl, err)
	}
	return render.Request{Purpose: render.PurposeWorkspacePrerequisite, ReleaseName: target.Release, Namespace: clusterNamespace, Input: map[string]any{
		"cluster":          map[string]any{"name": clusterName, "namespace": clusterNamespace},
		"serviceSetName":   target.ServiceSet,
		"template":         tmpl,
		"releaseName":      target.Release,
		"releaseNamespace": target.Namespace,
		"values":           valuesJSON,
		"helm":             map[string]any{"wait": true, "timeout": PrerequisiteTimeout(class).String()},
		"provider":         map[string]any{"name": k0rdentv1beta1.DefaultStateManagementProviderName},
		"labels": map[string]any{
			PrerequisiteClusterLabel:  naming.LabelValue(clusterName),
			PrerequisiteTemplateLabel: naming.LabelValue(tmpl),
		},
		"operator": operator,
	}}, nil
}

// Resources merges the class's default resources with the workspace's
// overrides. What they ask for is request.Of's.
func Resources(class *workspacesv1.WorkspaceClass, obj *workspacesv1.WorkspaceDeployment) workspacesv1.WorkspaceResourceSpec {
	return values.MergeResources(&class.Spec.DefaultResources, obj.Spec.Resources)
}

// BundleNamespace is where a WorkspaceClass's bundle ConfigMap is looked up:
// the class is cluster-scoped, so its ConfigMap lives beside its
// ServiceTemplate (kcm-system unless the class names another namespace).
func BundleNamespace(class *workspacesv1.WorkspaceClass) string {
	if ns := class.Spec.ServiceTemplate.Namespace; ns != "" {
		return ns
	}
	return k0rdentv1beta1.SystemNamespace
}
