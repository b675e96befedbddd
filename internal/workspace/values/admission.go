package values

import (
	"errors"
	"fmt"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/gpu"
)

// ErrNotAdmitted is the error of values that would give a chart, at a path
// where Apiary writes the admitted resources or placement, anything but
// what was admitted.
var ErrNotAdmitted = errors.New("the values that reach the chart differ from what was admitted")

// Admission is what a chart must read at every path Apiary writes the
// admitted resources and placement to: the standard _exalsius paths and the
// class's resourceInjection paths, each with its value, or nothing where the
// field resolves to nothing. Inject writes it; Check verifies it on what is
// delivered. Both read the same list, so a field added to the injection is
// checked by construction.
type Admission struct {
	writes []admittedWrite
}

// admittedWrite is one path of an Admission.
type admittedWrite struct {
	// field is the resource field's JSON name (or gpuResourceName,
	// nodeSelector).
	field string
	// path is how errors and warnings name the path: as the class writes
	// it, or FormatPath of a standard path.
	path string
	segs []string
	// value is what the chart reads there; set is false where it must read
	// nothing.
	value any
	set   bool
	// standard is true for the _exalsius paths.
	standard bool
}

// NewAdmission lists what Inject writes for the resolved resources and
// placement with the class's injection map. The map must pass
// ValidateInjection, and a vendor must have a known resource name.
func NewAdmission(resolved workspacesv1.WorkspaceResourceSpec, placement GPUPlacement, injection *workspacesv1.ResourceInjectionMap) (*Admission, error) {
	if err := ValidateInjection(injection); err != nil {
		return nil, err
	}
	per := resolved.PerReplica
	if per == nil {
		per = &workspacesv1.PerReplicaResources{}
	}
	vendor := placement.Vendor
	if per.GPUVendor != nil && *per.GPUVendor != "" {
		vendor = string(*per.GPUVendor)
	}
	resourceName := placement.ResourceName
	if resourceName == "" && (vendor != "" || per.GPUCount != nil && *per.GPUCount > 0) {
		// A bare gpuCount asks for NVIDIA GPUs: the exalsius operator gave
		// it no resource name, so its charts requested no GPU (reference
		// defect 9).
		var err error
		if resourceName, err = gpu.ResourceFor(vendor); err != nil {
			return nil, err
		}
	}
	fieldValue := map[string]any{}
	if resolved.Replicas != nil {
		fieldValue["replicas"] = int(*resolved.Replicas)
	}
	if per.CPU != nil {
		fieldValue["cpu"] = quantityString(per.CPU)
	}
	if per.Memory != nil {
		fieldValue["memory"] = quantityString(per.Memory)
	}
	if per.Storage != nil {
		fieldValue["storage"] = quantityString(per.Storage)
	}
	if per.GPUCount != nil {
		fieldValue["gpuCount"] = int(*per.GPUCount)
	}
	if vendor != "" {
		fieldValue["gpuVendor"] = vendor
	}
	if per.GPUType != nil {
		fieldValue["gpuType"] = *per.GPUType
	}

	a := &Admission{}
	fields := injectFields(injection)
	for _, f := range fields {
		v, ok := fieldValue[f.name]
		a.writes = append(a.writes, admittedWrite{field: f.name, path: FormatPath(f.standard), segs: f.standard, value: v, set: ok, standard: true})
	}
	a.writes = append(a.writes, admittedWrite{field: "gpuResourceName", path: FormatPath(pathResourceName),
		segs: pathResourceName, value: resourceName, set: resourceName != "", standard: true})
	var sel map[string]any
	if len(placement.NodeSelector) > 0 {
		sel = make(map[string]any, len(placement.NodeSelector))
		for k, v := range placement.NodeSelector {
			sel[k] = v
		}
	}
	a.writes = append(a.writes, admittedWrite{field: "nodeSelector", path: FormatPath(pathNodeSelector),
		segs: pathNodeSelector, value: sel, set: sel != nil, standard: true})
	// Injection paths conflict with neither the standard paths nor each
	// other (ValidateInjection), so the order of the writes is free.
	for _, f := range fields {
		v, ok := fieldValue[f.name]
		for _, p := range f.paths {
			segs, _ := ParsePath(string(p)) // validated above
			a.writes = append(a.writes, admittedWrite{field: f.name, path: string(p), segs: segs, value: v, set: ok})
		}
	}
	return a, nil
}

// write writes the admission into values where touch allows, in place, and
// returns the user values it replaced or removed at injection paths.
func (a *Admission) write(values map[string]any, touch func(segs []string) bool) []Overwrite {
	var out []Overwrite
	for _, w := range a.writes {
		if !touch(w.segs) {
			continue
		}
		if w.standard {
			if w.set {
				SetPath(values, w.segs, deepCopy(w.value))
			}
			continue
		}
		if !w.set {
			// Nothing resolved: no user-chosen amount stays where the
			// chart reads this field.
			if prev, removed := deleteLeaf(values, w.segs); removed && prev != nil {
				out = append(out, Overwrite{Path: w.path, Field: w.field, Removed: true})
			}
			continue
		}
		prev, existed := SetPath(values, w.segs, deepCopy(w.value))
		if existed && prev != nil && w.segs[0] != ReservedKey && !sameValue(prev, w.value) {
			out = append(out, Overwrite{Path: w.path, Field: w.field})
		}
	}
	return out
}

// Enforce writes the admission into a tree that Sveltos merges over the
// injected values (the secret values), at every injection path whose
// top-level key the tree holds: however the trees are merged, the tree then
// gives the chart what was admitted there, or nothing where the field
// resolves to nothing. A tree that holds none of those keys is left as it
// is. It returns the user values replaced or removed, like Inject.
func (a *Admission) Enforce(tree map[string]any) []Overwrite {
	if tree == nil {
		return nil
	}
	return a.write(tree, func(segs []string) bool {
		_, ok := tree[segs[0]]
		return ok
	})
}

// Source is one values document that reaches a chart, parsed, with the
// name errors give it (e.g. `Secret ns/name (key values.yaml)`).
type Source struct {
	Name   string
	Values map[string]any
}

// Check is the last check of what reaches a chart. sources are the
// documents a release is installed with, in the order Sveltos merges them
// (the service's values, then each valuesFrom document). The deep merge of
// sources (DeepMerge, later wins, as Sveltos merges valuesFrom over the
// values) must hold at every path of the admission exactly the admitted
// value, or nothing (absent or null) where the field resolves to nothing.
// And so that no way of merging (deep, or top-level keys replacing each
// other as older Sveltos versions did) can change the outcome, every source
// that holds the top-level key of such a path must hold the admitted value
// there too, or nothing. The error wraps ErrNotAdmitted and names the
// source, path and field, never a value.
func (a *Admission) Check(sources []Source) error {
	merged := map[string]any{}
	for _, s := range sources {
		merged = DeepMerge(merged, s.Values)
	}
	for _, w := range a.writes {
		for _, s := range sources {
			if _, ok := s.Values[w.segs[0]]; !ok {
				continue
			}
			if !w.holds(s.Values) {
				return fmt.Errorf("%s sets %s (%s): %w", s.Name, w.path, w.field, ErrNotAdmitted)
			}
		}
		if !w.holds(merged) {
			if !w.set {
				return fmt.Errorf("the merged values hold a value at %s (%s), which resolves to nothing: %w", w.path, w.field, ErrNotAdmitted)
			}
			return fmt.Errorf("the merged values do not hold the admitted value at %s (%s): %w", w.path, w.field, ErrNotAdmitted)
		}
	}
	return nil
}

// holds reports whether values give the chart what w admits: the value,
// or nothing.
func (w admittedWrite) holds(values map[string]any) bool {
	v, ok := LookupPath(values, w.segs)
	if !w.set {
		return !ok || v == nil
	}
	return ok && v != nil && sameValue(v, w.value)
}
