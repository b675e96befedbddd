package desired

import (
	"encoding/base64"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/values"
	"github.com/apiaryhq/apiary/internal/yamlbound"
)

// CheckAdmitted is the last check before a workspace's objects are
// delivered, in either mode: for every service of every ServiceSet among
// objs, the values the chart will be installed with — the service's values
// and every data key of every valuesFrom object it names, in the order
// Sveltos merges them — must give the chart, at every path where Apiary
// injects the admitted resources and placement, exactly what was admitted
// (values.Admission.Check). A valuesFrom object that is not among objs
// cannot be checked, and is refused too. The error wraps
// values.ErrNotAdmitted and never quotes a value.
func CheckAdmitted(objs []*unstructured.Unstructured, class *workspacesv1.WorkspaceClass,
	resolved workspacesv1.WorkspaceResourceSpec) error {
	key, memo := admittedKey(objs, class, resolved)
	if _, hit := admittedChecks.Get(key); memo && hit {
		return nil
	}
	if err := checkAdmitted(objs, class, resolved); err != nil {
		return err
	}
	if memo {
		admittedChecks.Add(key, struct{}{})
	}
	return nil
}

// checkAdmitted is CheckAdmitted without the memo.
func checkAdmitted(objs []*unstructured.Unstructured, class *workspacesv1.WorkspaceClass,
	resolved workspacesv1.WorkspaceResourceSpec) error {
	admission, err := values.NewAdmission(resolved, plan.Placement(resolved), class.Spec.ResourceInjection)
	if err != nil {
		return fmt.Errorf("%w: %w", values.ErrNotAdmitted, err)
	}
	for _, o := range objs {
		if o.GroupVersionKind() != k0rdentv1beta1.GroupVersion.WithKind("ServiceSet") {
			continue
		}
		services, _, _ := unstructured.NestedSlice(o.Object, "spec", "services")
		for _, s := range services {
			svc, _ := s.(map[string]any)
			sources, err := serviceSources(objs, o.GetNamespace(), svc)
			if err != nil {
				return fmt.Errorf("ServiceSet %s: %w", o.GetName(), err)
			}
			if err := admission.Check(sources); err != nil {
				return fmt.Errorf("ServiceSet %s, service %v: %w", o.GetName(), svc["name"], err)
			}
		}
	}
	return nil
}

// serviceSources returns the values documents of a ServiceSet service, in
// the order Sveltos merges them.
func serviceSources(objs []*unstructured.Unstructured, namespace string, svc map[string]any) ([]values.Source, error) {
	text, _ := svc["values"].(string)
	doc, err := decodeDocument([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("its values: %w", err)
	}
	sources := []values.Source{{Name: "the service's values", Values: doc}}
	refs, _ := svc["valuesFrom"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		obj := findObject(objs, kind, namespace, name)
		if obj == nil {
			return nil, fmt.Errorf("valuesFrom %s %s/%s is not delivered with the workspace, so what it sets at the class's injection paths cannot be checked: %w",
				kind, namespace, name, values.ErrNotAdmitted)
		}
		data, err := objectData(obj)
		if err != nil {
			return nil, fmt.Errorf("valuesFrom %s %s/%s: %w", kind, namespace, name, err)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys) // Sveltos reads the keys in map order: any order must do
		for _, k := range keys {
			doc, err := decodeDocument(data[k])
			if err != nil {
				return nil, fmt.Errorf("valuesFrom %s %s/%s, key %s: %w", kind, namespace, name, k, err)
			}
			sources = append(sources, values.Source{Name: fmt.Sprintf("%s %s/%s (key %s)", kind, namespace, name, k), Values: doc})
		}
	}
	return sources, nil
}

// decodeDocument decodes a values document as Sveltos does, bounded.
func decodeDocument(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := yamlbound.Unmarshal(data, &doc, values.MaxExpandedTotalBytes); err != nil {
		return nil, fmt.Errorf("%w: %w", values.ErrNotAdmitted, err)
	}
	return doc, nil
}

// findObject returns the Secret or ConfigMap of objs with kind, namespace
// and name, nil when there is none.
func findObject(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GroupVersionKind() == corev1.SchemeGroupVersion.WithKind(kind) && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

// objectData is a rendered Secret's data (and stringData) or a ConfigMap's
// data (and binaryData), decoded.
func objectData(o *unstructured.Unstructured) (map[string][]byte, error) {
	out := map[string][]byte{}
	encoded := "binaryData"
	plain := "data"
	if o.GetKind() == "Secret" {
		encoded, plain = "data", "stringData"
	}
	enc, _, _ := unstructured.NestedMap(o.Object, encoded)
	for k, v := range enc {
		s, _ := v.(string)
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("key %s is not base64: %w", k, err)
		}
		out[k] = data
	}
	txt, _, _ := unstructured.NestedMap(o.Object, plain)
	for k, v := range txt {
		s, _ := v.(string)
		out[k] = []byte(s) // stringData wins over data, as the API server merges it
	}
	return out, nil
}
