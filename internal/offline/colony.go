package offline

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
)

// renderer renders the inputs; it holds what every object needs.
type renderer struct {
	in       *inputs
	bundles  *render.Registry
	settings map[string]any
	warn     func(string, ...any)
	// colonyServices maps a ClusterDeployment ("namespace/name") rendered
	// from a Colony to the templates of its spec.serviceSpec.services.
	colonyServices map[string]map[string]bool
}

// checkColony reports the schema problems the API server would refuse.
func checkColony(c input[*infrav1.Colony]) error {
	obj := c.obj
	bad := func(field, msg string) error {
		return &fieldError{src: c.src, kind: "Colony", name: obj.Name, field: field, msg: msg}
	}
	if obj.Name == "" {
		return bad("metadata.name", "is required")
	}
	var errs []error
	seen := map[string]int{}
	for i, e := range obj.Spec.ColonyClusters {
		field := fmt.Sprintf("spec.colonyClusters[%d].clusterName", i)
		switch {
		case e.ClusterName == "":
			errs = append(errs, bad(field, "is required"))
		case len(validation.IsDNS1123Label(e.ClusterName)) > 0:
			errs = append(errs, bad(field, fmt.Sprintf("%q must be a DNS-1123 label (lower-case letters, digits and '-')", e.ClusterName)))
		}
		if j, dup := seen[e.ClusterName]; dup && e.ClusterName != "" {
			errs = append(errs, bad(field, fmt.Sprintf("%q is also the clusterName of spec.colonyClusters[%d]", e.ClusterName, j)))
		}
		seen[e.ClusterName] = i
		if err := checkBundleRef(e.Bundle); err != "" {
			errs = append(errs, bad(fmt.Sprintf("spec.colonyClusters[%d].bundle", i), err))
		}
	}
	return errors.Join(errs...)
}

func checkBundleRef(ref *commonv1.BundleReference) string {
	if ref != nil && ref.ConfigMapRef != nil && ref.ConfigMapRef.Name == "" {
		return "configMapRef.name is required"
	}
	return ""
}

// renderColony renders every entry of a Colony as renderClusters and
// renderCluster of controllers/colony_render.go do, without owner
// references. Entries that fail are all reported.
func (r *renderer) renderColony(c input[*infrav1.Colony]) ([]*unstructured.Unstructured, error) {
	if err := checkColony(c); err != nil {
		return nil, err
	}
	obj := c.obj
	var out []*unstructured.Unstructured
	var errs []error
	for i, entry := range obj.Spec.ColonyClusters {
		if entry.ClusterDeploymentSpec == nil && entry.Values == nil && entry.Bundle == nil {
			continue
		}
		fail := func(field string, err error) {
			errs = append(errs, &fieldError{src: c.src, kind: "Colony", name: obj.Name,
				field: fmt.Sprintf("spec.colonyClusters[%d]%s", i, field), msg: err.Error()})
		}
		cdName := naming.ClusterDeploymentName(obj.Name, entry.ClusterName)
		bundle, field, err := r.bundleFor(obj.Namespace, entry.Bundle, render.ColonyClusterBundle)
		if err != nil {
			fail(field, err)
			continue
		}
		req, err := render.ColonyClusterRequest(obj, &entry, cdName, r.settings)
		if err != nil {
			fail(".values", err)
			continue
		}
		output, err := bundle.Render(req)
		if err != nil {
			fail("", bundleError(bundle, err))
			continue
		}
		render.LabelColonyObjects(output.Objects, obj.Name, entry.ClusterName)
		for _, o := range output.Objects {
			r.noteServices(o)
		}
		out = append(out, output.Objects...)
	}
	return out, errors.Join(errs...)
}

// noteServices remembers the templates a rendered ClusterDeployment installs.
func (r *renderer) noteServices(o *unstructured.Unstructured) {
	if o.GetKind() != "ClusterDeployment" {
		return
	}
	services, _, _ := unstructured.NestedSlice(o.Object, "spec", "serviceSpec", "services")
	key := o.GetNamespace() + "/" + o.GetName()
	for _, s := range services {
		m, _ := s.(map[string]any)
		if t, ok := m["template"].(string); ok {
			if r.colonyServices[key] == nil {
				r.colonyServices[key] = map[string]bool{}
			}
			r.colonyServices[key][t] = true
		}
	}
}

// bundleFor mirrors resolveBundle of controllers/colony_render.go; a
// ConfigMap bundle is read from the inputs. It returns the field at fault.
func (r *renderer) bundleFor(namespace string, ref *commonv1.BundleReference, def string) (*render.Bundle, string, error) {
	switch {
	case ref != nil && ref.ConfigMapRef != nil:
		key := namespace + "/" + ref.ConfigMapRef.Name
		cm, ok := r.in.configMaps[key]
		if !ok {
			return nil, ".bundle.configMapRef", fmt.Errorf("bundle ConfigMap %s is not among the inputs", key)
		}
		files := make(map[string][]byte, len(cm.obj.Data)+len(cm.obj.BinaryData))
		for k, v := range cm.obj.Data {
			files[k] = []byte(v)
		}
		for k, v := range cm.obj.BinaryData {
			files[k] = v
		}
		b, err := render.LoadFiles("configmap/"+key, files)
		if err != nil {
			return nil, ".bundle.configMapRef", fmt.Errorf("%w (ConfigMap from %s)", err, cm.src)
		}
		return b, "", nil
	case ref != nil && ref.Name != "":
		b, err := r.bundles.Get(ref.Name)
		return b, ".bundle.name", err
	default:
		b, err := r.bundles.Get(def)
		return b, "", err
	}
}

// bundleError adds the folder of a directory bundle to a render error, so
// that it names the file on disk.
func bundleError(b *render.Bundle, err error) error {
	var re *render.Error
	if errors.As(err, &re) && b.Source != "" && b.Source != render.SourceBuiltIn && re.File != "" {
		return fmt.Errorf("%w (bundle folder %s)", err, b.Source)
	}
	return err
}
