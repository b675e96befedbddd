package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// ReservedKey is the top-level values key of the operator's standard paths.
const ReservedKey = "_exalsius"

// GPUPlacement is what the GPU gate learned about the nodes a workspace
// lands on.
type GPUPlacement struct {
	// ResourceName is the extended resource the matching nodes offer
	// (nvidia.com/gpu or amd.com/gpu); "" when no node scan ran.
	ResourceName string
	// Vendor is the vendor inferred from the matching nodes; it is used
	// when the resolved resources name none.
	Vendor string
	// NodeSelector is the exact selector the gate matched (gpu.Selector of
	// gpuType and gpuNodeSelector); it is injected as the chart's
	// nodeSelector.
	NodeSelector map[string]string
}

// Overwrite is a user value at a resourceInjection path that the operator
// replaced, or removed because the workspace resolves no value for the field.
type Overwrite struct {
	// Path is the injection path as the class writes it.
	Path string
	// Field is the resource field injected there, by its JSON name:
	// replicas, cpu, memory, storage, gpuCount, gpuVendor or gpuType.
	Field string
	// Removed says that the value was removed, not replaced: the field
	// resolved to nothing, and a chart reads no user-chosen amount there.
	Removed bool
}

// String is the exalsius warning: operator overwrote spec.values.<path>
// (<field>) — use spec.resources.perReplica.<field> instead (or
// spec.resources.replicas); "removed" instead of "overwrote" for a removal.
func (o Overwrite) String() string {
	use := "spec.resources.perReplica." + o.Field
	if o.Field == "replicas" {
		use = "spec.resources.replicas"
	}
	verb := "overwrote"
	if o.Removed {
		verb = "removed"
	}
	return fmt.Sprintf("operator %s spec.values.%s (%s) — use %s instead", verb, o.Path, o.Field, use)
}

// InjectResult reports what Inject replaced.
type InjectResult struct {
	// Overwritten lists the user values at resourceInjection paths that
	// were replaced by a different value, in field order, then path order.
	Overwritten []Overwrite
}

// injectField is one resource field: its JSON name, standard path and the
// class's injection paths.
type injectField struct {
	name     string
	standard []string
	paths    []workspacesv1.InjectionPath
}

var (
	pathPerReplica   = []string{ReservedKey, "resources", "perReplica"}
	pathReplicas     = []string{ReservedKey, "resources", "replicas"}
	pathResourceName = []string{ReservedKey, "resources", "perReplica", "gpuResourceName"}
	pathNodeSelector = []string{ReservedKey, "scheduling", "nodeSelector"}
)

// injectFields lists the fields in injection order.
func injectFields(m *workspacesv1.ResourceInjectionMap) []injectField {
	if m == nil {
		m = &workspacesv1.ResourceInjectionMap{}
	}
	per := func(name string) []string { return append(slices.Clone(pathPerReplica), name) }
	return []injectField{
		{"replicas", pathReplicas, m.Replicas},
		{"cpu", per("cpu"), m.CPU},
		{"memory", per("memory"), m.Memory},
		{"storage", per("storage"), m.Storage},
		{"gpuCount", per("gpuCount"), m.GPUCount},
		{"gpuVendor", per("gpuVendor"), m.GPUVendor},
		{"gpuType", per("gpuType"), m.GPUType},
	}
}

// Inject writes the resolved resources into values, in place.
//
// Every non-nil resolved field is written at its standard path:
// _exalsius.resources.replicas (int) and
// _exalsius.resources.perReplica.{cpu, memory, storage} (Quantity strings),
// .gpuCount (int), .gpuVendor (the resolved vendor, else placement.Vendor),
// .gpuType; then .gpuResourceName, which is placement.ResourceName, else, when a
// vendor is known or gpuCount > 0, ResourceNameFor(vendor) (so a bare
// gpuCount requests nvidia.com/gpu); and _exalsius.scheduling.nodeSelector
// (placement.NodeSelector, when non-empty). Each field's class resourceInjection
// paths receive the same value.
//
// Operator values always win, and a chart reads at the standard paths and
// the injection paths exactly what was resolved: a field that resolves to
// nothing removes the value at its injection paths. Every user value
// (non-nil and different) that gets replaced or removed at a
// resourceInjection path outside _exalsius is reported in the result.
//
// values must hold nothing under ReservedKey: _exalsius is the operator's
// own namespace, and its content is what was admitted and charged. Inject
// refuses such values with an error wrapping ErrReserved (callers refuse
// them first, naming their source). The injection map must pass
// ValidateInjection; otherwise Inject returns its error (the class
// controller rejects such classes up front, so this is a bug or a race,
// never a silent skip). A nil values map is an error too. Inject writes
// nothing when it returns an error.
func Inject(values map[string]any, resolved workspacesv1.WorkspaceResourceSpec, placement GPUPlacement, injection *workspacesv1.ResourceInjectionMap) (InjectResult, error) {
	var res InjectResult
	if values == nil {
		return res, errors.New("cannot inject resources into nil values")
	}
	a, err := NewAdmission(resolved, placement, injection)
	if err != nil {
		return res, err
	}
	if err := CheckReserved(values); err != nil {
		return res, err
	}
	res.Overwritten = a.write(values, func([]string) bool { return true })
	return res, nil
}

// deleteLeaf removes the value at path from values, keeping the maps on the
// way; it returns the value and whether there was one.
func deleteLeaf(values map[string]any, path []string) (any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	parent := values
	if len(path) > 1 {
		p, ok := LookupPath(values, path[:len(path)-1])
		if parent, ok = p.(map[string]any); !ok {
			return nil, false
		}
	}
	last := path[len(path)-1]
	prev, ok := parent[last]
	delete(parent, last)
	return prev, ok
}

// quantityString returns q.String() without touching q: String caches
// its result in its receiver, and q may come from a shared object.
func quantityString(q *resource.Quantity) string {
	c := q.DeepCopy()
	return c.String()
}

// sameValue reports whether a and b encode to the same JSON, so that a
// user's 2 (a float64 from JSON) equals the operator's int 2.
func sameValue(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return reflect.DeepEqual(a, b)
	}
	return bytes.Equal(ja, jb)
}

// ValidateInjection checks a class's resourceInjection: every path must
// parse (ParsePath), and no two writes may overwrite each other: a path
// must not lie inside another path (one a prefix of the other), nor equal
// a path of another field, counting the standard _exalsius paths. The
// error names the field and the path, e.g.
// `resourceInjection.cpu path "a..b": empty segment at position 3`.
// A nil map is valid.
func ValidateInjection(m *workspacesv1.ResourceInjectionMap) error {
	if m == nil {
		return nil
	}
	type write struct {
		field, name string // name is how errors name the write
		segs        []string
	}
	var writes []write
	fields := injectFields(m)
	for _, f := range fields {
		writes = append(writes, write{f.name, fmt.Sprintf("standard path %q", FormatPath(f.standard)), f.standard})
	}
	writes = append(writes,
		write{"gpuResourceName", fmt.Sprintf("standard path %q", FormatPath(pathResourceName)), pathResourceName},
		write{"nodeSelector", fmt.Sprintf("standard path %q", FormatPath(pathNodeSelector)), pathNodeSelector})
	for _, f := range fields {
		for _, p := range f.paths {
			segs, err := ParsePath(string(p))
			if err != nil {
				return fmt.Errorf("resourceInjection.%s %w", f.name, err)
			}
			w := write{f.name, fmt.Sprintf("resourceInjection.%s path %q", f.name, p), segs}
			for _, o := range writes {
				if conflict(segs, o.segs, f.name == o.field) {
					return fmt.Errorf("%s conflicts with %s: one would overwrite the other", w.name, o.name)
				}
			}
			writes = append(writes, w)
		}
	}
	return nil
}

// conflict reports whether writes at a and b would overwrite each other:
// one is a proper prefix of the other, or they are equal and belong to
// different fields (a field's own standard path, or the same path written
// twice, is a harmless duplicate).
func conflict(a, b []string, sameField bool) bool {
	n := min(len(a), len(b))
	if !slices.Equal(a[:n], b[:n]) {
		return false
	}
	return len(a) != len(b) || !sameField
}
