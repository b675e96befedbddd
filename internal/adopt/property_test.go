package adopt

import (
	"math/rand"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// universe are the fields the generated objects and managers use: labels
// and annotations in and out of protected domains, spec fields Apiary
// renders and kcm's, a finalizer and a status field.
var universe = []fieldpath.Path{
	path("metadata", "labels", "team"), path("metadata", "labels", "tier"), path("metadata", "labels", "dropped"),
	path("metadata", "labels", "k0rdent.mirantis.com/component"), path("metadata", "labels", "app.kubernetes.io/name"),
	path("metadata", "annotations", "note"), path("metadata", "annotations", "old"),
	path("spec", "template"), path("spec", "config", "region"), path("spec", "config", "old"), path("spec", "ipamClaim", "ref"),
	append(path("metadata", "finalizers"), fieldpath.PathElement{Value: ptr(value.NewValueInterface("k0rdent.mirantis.com/x"))}),
}

func ptr[T any](v T) *T { return &v }

func path(names ...string) fieldpath.Path {
	p := make(fieldpath.Path, 0, len(names))
	for _, n := range names {
		p = append(p, fieldpath.PathElement{FieldName: ptr(n)})
	}
	return p
}

// generate builds, from a seed, a desired object setting some of the
// universe's map fields, and managed fields of the operator ("manager"),
// kcm, Apiary's apply entry and its own Update entry, and a status entry.
func generate(seed int64) ([]metav1.ManagedFieldsEntry, map[string]any) {
	r := rand.New(rand.NewSource(seed))
	desired := map[string]any{"apiVersion": v1beta1, "kind": "ClusterDeployment"}
	for _, p := range universe {
		if p[len(p)-1].FieldName == nil || r.Intn(2) == 0 {
			continue
		}
		m := desired
		for _, pe := range p[:len(p)-1] {
			next, ok := m[*pe.FieldName].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[*pe.FieldName] = next
			}
			m = next
		}
		m[*p[len(p)-1].FieldName] = "v"
	}
	subset := func() *fieldpath.Set {
		s := &fieldpath.Set{}
		for _, p := range universe {
			if r.Intn(3) == 0 {
				s.Insert(p)
			}
		}
		return s
	}
	var managed []metav1.ManagedFieldsEntry
	add := func(manager string, op metav1.ManagedFieldsOperationType, sub string, s *fieldpath.Set) {
		if r.Intn(4) == 0 {
			return
		}
		raw, err := s.ToJSON()
		if err != nil {
			panic(err)
		}
		managed = append(managed, entry(manager, op, sub, string(raw)))
	}
	add("manager", metav1.ManagedFieldsOperationUpdate, "", subset())
	add("kcm", metav1.ManagedFieldsOperationUpdate, "", subset())
	add("apiary", metav1.ManagedFieldsOperationApply, "", subset())
	add("apiary", metav1.ManagedFieldsOperationUpdate, "", subset())
	status := &fieldpath.Set{}
	status.Insert(path("status", "phase"))
	add("manager", metav1.ManagedFieldsOperationUpdate, "status", status)
	r.Shuffle(len(managed), func(i, j int) { managed[i], managed[j] = managed[j], managed[i] })
	return managed, desired
}

// fieldsOf is the union of the main-resource fields of the entries for
// which keep is true, and the entries for which it is false, as they are.
func fieldsOf(t *testing.T, entries []metav1.ManagedFieldsEntry, keep func(metav1.ManagedFieldsEntry) bool) (*fieldpath.Set, []metav1.ManagedFieldsEntry) {
	t.Helper()
	all := &fieldpath.Set{}
	var rest []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if !keep(e) {
			rest = append(rest, e)
			continue
		}
		s, err := decode(e)
		if err != nil {
			t.Fatal(err)
		}
		all = all.Union(s)
	}
	return all, rest
}

// FuzzPlan checks Plan's invariants on generated objects: no field loses
// every owner, only fields in scope move and only to Apiary's apply entry,
// other managers and subresources are untouched, Stale names exactly the
// moved labels and annotations the desired object lacks, and a second Plan
// moves nothing.
func FuzzPlan(f *testing.F) {
	for seed := int64(0); seed < 300; seed++ {
		f.Add(seed)
	}
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	m := Migration{From: []string{"manager"}, To: "apiary", Self: true}
	involved := func(e metav1.ManagedFieldsEntry) bool {
		return e.Subresource == "" && (e.Manager == "manager" && e.Operation == metav1.ManagedFieldsOperationUpdate || e.Manager == "apiary")
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		managed, desired := generate(seed)
		res, err := m.Plan(managed, desired, now)
		if err != nil {
			t.Fatal(err)
		}
		before, otherBefore := fieldsOf(t, managed, involved)
		after, otherAfter := fieldsOf(t, res.ManagedFields, involved)
		if !before.Equals(after) {
			t.Fatalf("seed %d: fields lost or gained: before %s, after %s", seed, before, after)
		}
		if len(otherBefore) != len(otherAfter) {
			t.Fatalf("seed %d: other entries changed: %v -> %v", seed, otherBefore, otherAfter)
		}
		for i := range otherBefore {
			if string(otherBefore[i].FieldsV1.Raw) != string(otherAfter[i].FieldsV1.Raw) || otherBefore[i].Manager != otherAfter[i].Manager {
				t.Fatalf("seed %d: entry of %s changed", seed, otherBefore[i].Manager)
			}
		}
		opBefore, _ := fieldsOf(t, managed, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == "manager" && involved(e) })
		opAfter, _ := fieldsOf(t, res.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == "manager" && involved(e) })
		selfAfter, _ := fieldsOf(t, res.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == "apiary" && e.Operation == metav1.ManagedFieldsOperationUpdate
		})
		if !selfAfter.Empty() {
			t.Fatalf("seed %d: Apiary's Update entry keeps %s", seed, selfAfter)
		}
		stale := &fieldpath.Set{}
		for _, p := range res.Stale {
			stale.Insert(p)
			if !isMeta(p) || inObject(p, desired) {
				t.Fatalf("seed %d: stale %s is not a label or annotation the desired object lacks", seed, p)
			}
		}
		moved := opBefore.Difference(opAfter)
		moved.Iterate(func(p fieldpath.Path) {
			if !inScope(p, desired) {
				t.Fatalf("seed %d: %s moved but is out of scope", seed, p)
			}
			if isMeta(p) && !inObject(p, desired) && !stale.Has(p) {
				t.Fatalf("seed %d: %s moved, is not desired, and is not stale", seed, p)
			}
		})
		opAfter.Iterate(func(p fieldpath.Path) {
			if inScope(p, desired) {
				t.Fatalf("seed %d: %s is in scope but stayed with the operator", seed, p)
			}
		})
		apply, _ := fieldsOf(t, res.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == "apiary" && e.Operation == metav1.ManagedFieldsOperationApply
		})
		if !stale.Difference(apply).Empty() {
			t.Fatalf("seed %d: stale fields %s are not Apiary's", seed, stale)
		}
		again, err := m.Plan(res.ManagedFields, desired, now)
		if err != nil {
			t.Fatal(err)
		}
		if again.Moved != 0 {
			t.Fatalf("seed %d: a second plan moved %d fields", seed, again.Moved)
		}
	})
}
