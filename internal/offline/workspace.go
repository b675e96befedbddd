package offline

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/resources"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// workspace is one WorkspaceDeployment with its class and resolved inputs,
// as controllers.workspaceRun.
type workspace struct {
	input[*workspacesv1.WorkspaceDeployment]
	class    input[*workspacesv1.WorkspaceClass]
	cdNS     string
	cdName   string
	resolved workspacesv1.WorkspaceResourceSpec
}

func (w *workspace) bad(field, msg string) error {
	return &fieldError{src: w.src, kind: "WorkspaceDeployment", name: w.obj.Name, field: field, msg: msg}
}

func (w *workspace) badClass(field, msg string) error {
	return &fieldError{src: w.class.src, kind: "WorkspaceClass", name: w.class.obj.Name, field: field, msg: msg}
}

// resolve checks the workspace and finds its class among the inputs.
func (r *renderer) resolve(d input[*workspacesv1.WorkspaceDeployment]) (*workspace, error) {
	w := &workspace{input: d}
	obj := d.obj
	var errs []error
	if obj.Name == "" {
		return nil, w.bad("metadata.name", "is required")
	}
	if obj.Spec.ClusterDeploymentRef.Name == "" {
		errs = append(errs, w.bad("spec.clusterDeploymentRef.name", "is required"))
	}
	for i, ref := range obj.Spec.ValuesFrom {
		if ref.Kind != "Secret" && ref.Kind != "ConfigMap" {
			errs = append(errs, w.bad(fmt.Sprintf("spec.valuesFrom[%d].kind", i), fmt.Sprintf("%q must be Secret or ConfigMap", ref.Kind)))
		}
		if ref.Name == "" {
			errs = append(errs, w.bad(fmt.Sprintf("spec.valuesFrom[%d].name", i), "is required"))
		}
	}
	if res := obj.Spec.Resources; res != nil {
		if err := resources.Check(*res); err != nil {
			errs = append(errs, w.bad("spec.resources", strings.ReplaceAll(err.Error(), "\n", "; ")))
		}
	}
	if obj.Spec.WorkspaceClassRef == "" {
		errs = append(errs, w.bad("spec.workspaceClassRef", "is required"))
		return nil, errors.Join(errs...)
	}
	class, ok := r.in.classes[obj.Spec.WorkspaceClassRef]
	if !ok {
		errs = append(errs, w.bad("spec.workspaceClassRef",
			fmt.Sprintf("WorkspaceClass %q is not among the inputs (add its file with -f)", obj.Spec.WorkspaceClassRef)))
		return nil, errors.Join(errs...)
	}
	w.class = class
	// As the class controller's validate, without the ServiceTemplate checks.
	if class.obj.Spec.ServiceTemplate.Name == "" {
		errs = append(errs, w.badClass("spec.serviceTemplate.name", "is required"))
	}
	if err := resources.Check(class.obj.Spec.DefaultResources); err != nil {
		errs = append(errs, w.badClass("spec.defaultResources", strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
	if err := values.ValidateInjection(class.obj.Spec.ResourceInjection); err != nil {
		errs = append(errs, w.badClass("spec.resourceInjection", err.Error()))
	}
	if err := values.ValidateFields(class.obj.Spec.UserFacingConfig); err != nil {
		errs = append(errs, w.badClass("spec.userFacingConfig", err.Error()))
	}
	for _, p := range plan.CheckClassValues(class.obj) {
		errs = append(errs, w.badClass(p.Field, p.Message))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// clusterKey and resolveResources of the controllers.
	w.cdName, w.cdNS = obj.Spec.ClusterDeploymentRef.Name, obj.Spec.ClusterDeploymentRef.Namespace
	if w.cdNS == "" {
		w.cdNS = obj.Namespace
	}
	w.resolved = plan.Resources(class.obj, obj)
	return w, nil
}

// renderWorkspace renders a workspace's prerequisites, ServiceSet and values
// Secret.
func (r *renderer) renderWorkspace(d input[*workspacesv1.WorkspaceDeployment]) ([]*unstructured.Unstructured, error) {
	w, err := r.resolve(d)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, p := range w.class.obj.Spec.Prerequisites {
		if r.colonyServices[w.cdNS+"/"+w.cdName][p.ServiceTemplate.Name] {
			continue
		}
		objs, err := r.renderPrerequisite(w, p)
		if err != nil {
			return nil, w.badClass(fmt.Sprintf("spec.prerequisites[%d]", i), err.Error())
		}
		out = append(out, objs...)
	}
	objs, err := r.renderValues(w)
	if err != nil {
		return nil, err
	}
	return append(out, objs...), nil
}

// renderValues resolves the workspace's values as the controller does, with
// valuesFrom read from the inputs, and renders its bundle.
func (r *renderer) renderValues(w *workspace) ([]*unstructured.Unstructured, error) {
	obj, class := w.obj, w.class.obj
	fetch := func(ref workspacesv1.ValuesReference) ([]byte, bool, error) {
		content, found, from := r.valuesContent(obj.Namespace, ref)
		if !found && from == "" {
			return nil, false, plan.ErrSourceUnavailable
		}
		return content, found, nil
	}
	v, err := plan.ResolveValues(class, obj, w.resolved, plan.Placement(w.resolved), fetch)
	var fieldErr *plan.FieldError
	switch {
	case errors.As(err, &fieldErr) && strings.HasSuffix(fieldErr.Field, "of the class"):
		return nil, w.badClass(strings.TrimSuffix(fieldErr.Field, " of the class"), fieldErr.Message)
	case errors.As(err, &fieldErr):
		return nil, w.bad(fieldErr.Field, fieldErr.Message)
	case err != nil:
		return nil, err
	}
	for _, field := range v.Unavailable {
		r.warn("%s: WorkspaceDeployment/%s: %s: the object is not among the inputs: its values are left out, and required values are not checked",
			w.src, obj.Name, field)
	}
	for _, o := range v.Overwritten {
		r.warn("%s: WorkspaceDeployment/%s: spec.values: %s", w.src, obj.Name, o.String())
	}
	bundle, _, err := r.bundleFor(plan.BundleNamespace(class), class.Spec.Bundle, render.WorkspaceServiceSetBundle)
	if err == nil {
		var req render.Request
		if req, err = plan.ServiceSetRequest(class, obj, w.cdName, w.cdNS, v, r.settings); err == nil {
			var out *render.Output
			if out, err = bundle.Render(req); err == nil {
				return out.Objects, nil
			}
			err = bundleError(bundle, err)
		}
	}
	return nil, w.bad("spec.workspaceClassRef", fmt.Sprintf("rendering with the bundle of WorkspaceClass %q: %s", class.Name, err))
}

// renderPrerequisite renders a prerequisite's shared ServiceSet as the controller does.
func (r *renderer) renderPrerequisite(w *workspace, p workspacesv1.PrerequisiteSpec) ([]*unstructured.Unstructured, error) {
	namespace := p.Namespace
	if namespace == "" {
		namespace = plan.DefaultPrerequisiteNamespace
	}
	bundle, err := r.bundles.Get(plan.PrerequisiteBundle)
	if err != nil {
		return nil, fmt.Errorf("prerequisite bundle: %w", err)
	}
	req, err := plan.PrerequisiteRequest(w.class.obj, p, w.cdName, w.cdNS,
		plan.NewPrerequisiteTarget(w.cdName, p.ServiceTemplate.Name, namespace), r.settings)
	if err != nil {
		return nil, err
	}
	out, err := bundle.Render(req)
	if err != nil {
		return nil, fmt.Errorf("rendering prerequisite %q: %w", p.ServiceTemplate.Name, bundleError(bundle, err))
	}
	return out.Objects, nil
}

// valuesContent reads a valuesFrom key from the inputs. from is the file of
// the object, "" when it is not among them.
func (r *renderer) valuesContent(namespace string, ref workspacesv1.ValuesReference) (content []byte, found bool, from string) {
	key := namespace + "/" + ref.Name
	if ref.Kind == "Secret" {
		s, ok := r.in.secrets[key]
		if !ok {
			return nil, false, ""
		}
		v, ok := s.obj.Data[plan.ValuesKey(ref)]
		return v, ok, s.src.file
	}
	cm, ok := r.in.configMaps[key]
	if !ok {
		return nil, false, ""
	}
	if v, ok := cm.obj.Data[plan.ValuesKey(ref)]; ok {
		return []byte(v), true, cm.src.file
	}
	v, ok := cm.obj.BinaryData[plan.ValuesKey(ref)]
	return v, ok, cm.src.file
}
