package adopt

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Migration moves field ownership from client-side writers to an apply
// field manager.
type Migration struct {
	// From are the field managers whose Update entries are taken over.
	From []string
	// To is the server-side apply field manager that takes them over.
	To string
	// Self also takes over, whole, To's own Update entry: the fields that
	// Adopted's write (an Update by To) changed.
	Self bool
}

// Enabled reports whether the migration has writers to take over from.
func (m Migration) Enabled() bool { return (len(m.From) > 0 || m.Self) && m.To != "" }

// Result is what Plan decided.
type Result struct {
	// ManagedFields are the object's new managed fields.
	ManagedFields []metav1.ManagedFieldsEntry
	// Moved counts the field paths that changed owner; zero when there is
	// nothing to write.
	Moved int
	// Stale are the moved labels and annotations that the desired object
	// does not set: the apply that follows removes them (Adopted does).
	Stale []fieldpath.Path
}

// Plan returns the managed fields of an object after moving to m.To the
// fields that the Update entries of m.From hold on the main resource for the
// desired object's API version, within the scope the package documents.
// desired is the object as Apiary is about to apply it. Entries left without
// fields are dropped; m.To's Apply entry is created when there is none.
func (m Migration) Plan(managed []metav1.ManagedFieldsEntry, desired map[string]any, now time.Time) (Result, error) {
	apiVersion, _ := desired["apiVersion"].(string)
	if !m.Enabled() || apiVersion == "" {
		return Result{ManagedFields: managed}, nil
	}
	moved := &fieldpath.Set{}
	rest := make([]*fieldpath.Set, len(managed))
	for i, e := range managed {
		if !m.takesFrom(e, apiVersion) {
			continue
		}
		set, err := decode(e)
		if err != nil {
			return Result{}, fmt.Errorf("reading the fields of manager %q: %w", e.Manager, err)
		}
		take := &fieldpath.Set{}
		set.Iterate(func(p fieldpath.Path) {
			if e.Manager == m.To || inScope(p, desired) {
				take.Insert(p)
			}
		})
		if take.Empty() {
			continue
		}
		moved = moved.Union(take)
		rest[i] = set.Difference(take)
	}
	if moved.Empty() {
		return Result{ManagedFields: managed}, nil
	}
	taken := moved
	out := make([]metav1.ManagedFieldsEntry, 0, len(managed)+1)
	target := -1
	for i, e := range managed {
		if rest[i] != nil {
			if rest[i].Empty() {
				continue
			}
			if err := encode(&e, rest[i]); err != nil {
				return Result{}, err
			}
		}
		if target < 0 && m.isTarget(e, apiVersion) {
			target = len(out)
		}
		out = append(out, *e.DeepCopy())
	}
	if target < 0 {
		out = append(out, metav1.ManagedFieldsEntry{Manager: m.To, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: apiVersion, Time: &metav1.Time{Time: now.UTC().Truncate(time.Second)}, FieldsType: "FieldsV1"})
		target = len(out) - 1
	} else {
		owned, err := decode(out[target])
		if err != nil {
			return Result{}, fmt.Errorf("reading the fields of manager %q: %w", m.To, err)
		}
		moved = owned.Union(moved)
	}
	if err := encode(&out[target], moved); err != nil {
		return Result{}, err
	}
	res := Result{ManagedFields: out}
	taken.Iterate(func(p fieldpath.Path) {
		res.Moved++
		if isMeta(p) && !inObject(p, desired) {
			res.Stale = append(res.Stale, p.Copy())
		}
	})
	return res, nil
}

func (m Migration) takesFrom(e metav1.ManagedFieldsEntry, apiVersion string) bool {
	return e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" &&
		e.APIVersion == apiVersion && (slices.Contains(m.From, e.Manager) || m.Self && e.Manager == m.To)
}

func (m Migration) isTarget(e metav1.ManagedFieldsEntry, apiVersion string) bool {
	return e.Manager == m.To && e.Operation == metav1.ManagedFieldsOperationApply &&
		e.Subresource == "" && e.APIVersion == apiVersion
}

// inScope reports whether a field path moves: it is set by the desired
// object, or it is a label or annotation outside the protected domains.
func inScope(p fieldpath.Path, desired map[string]any) bool {
	if inObject(p, desired) {
		return true
	}
	return isMeta(p) && !Protected(*p[2].FieldName)
}

// isMeta reports whether a path names one label or annotation.
func isMeta(p fieldpath.Path) bool {
	if len(p) != 3 || p[0].FieldName == nil || *p[0].FieldName != "metadata" || p[1].FieldName == nil || p[2].FieldName == nil {
		return false
	}
	return *p[1].FieldName == "labels" || *p[1].FieldName == "annotations"
}

// protectedDomains are the key prefixes of labels and annotations that
// belong to Kubernetes, Cluster API, k0rdent and Sveltos, whose controllers
// may write under the same field manager name as the exalsius operator.
var protectedDomains = []string{"kubernetes.io", "k8s.io", "x-k8s.io", "k0rdent.mirantis.com", "projectsveltos.io"}

// Protected reports whether a label or annotation key is in a domain that
// is never taken over unless Apiary renders the key itself.
func Protected(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range protectedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// inObject reports whether the object sets the field a path names: map
// fields by name, list items by their key, value or index.
func inObject(p fieldpath.Path, obj any) bool {
	v := obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[*pe.FieldName]; !ok {
				return false
			}
		case pe.Key != nil:
			item, ok := keyed(v, *pe.Key)
			if !ok {
				return false
			}
			v = item
		case pe.Value != nil:
			l, _ := v.([]any)
			return slices.ContainsFunc(l, func(item any) bool { return value.Equals(value.NewValueInterface(item), *pe.Value) })
		case pe.Index != nil:
			l, _ := v.([]any)
			if *pe.Index < 0 || *pe.Index >= len(l) {
				return false
			}
			v = l[*pe.Index]
		default:
			return false
		}
	}
	return true
}

// keyed finds the item of an associative list whose fields match key.
func keyed(list any, key value.FieldList) (any, bool) {
	l, _ := list.([]any)
	for _, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for _, f := range key {
			got, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(got), f.Value) {
				match = false
				break
			}
		}
		if match {
			return item, true
		}
	}
	return nil, false
}

func decode(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		return nil, err
	}
	return s, nil
}

func encode(e *metav1.ManagedFieldsEntry, s *fieldpath.Set) error {
	raw, err := s.ToJSON()
	if err != nil {
		return fmt.Errorf("encoding the fields of manager %q: %w", e.Manager, err)
	}
	e.FieldsType = "FieldsV1"
	e.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	return nil
}
