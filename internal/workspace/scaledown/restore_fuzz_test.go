package scaledown

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzStartNeverRestoresMoreThanTheLimit: whatever a controller's spec and
// saved annotation say (the tenant's to write), whatever the record holds
// and whatever the limit, Start's patch never sets more replicas than the
// limit, never resumes a CronJob with a limit of zero, and touches a
// controller the record does not name only when there is no record at all.
func FuzzStartNeverRestoresMoreThanTheLimit(f *testing.F) {
	f.Add("Deployment", "web", int64(2), "10000", true, int64(3), true, int64(1))
	f.Add("CronJob", "backup", int64(0), "false", true, int64(1), false, int64(0))
	f.Add("StatefulSet", "db", int64(0), "abc", false, int64(0), false, int64(5))
	f.Fuzz(func(t *testing.T, kindName, name string, replicas int64, saved string, annotated bool,
		recorded int64, inRecord bool, limit int64) {
		var k kind
		for _, c := range kinds {
			if c.gvk.Kind == kindName {
				k = c
			}
		}
		if k.gvk.Kind == "" {
			k = kinds[0]
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": replicas}}}
		u.SetName(name)
		if annotated {
			u.SetAnnotations(map[string]string{ReplicasAnnotation: saved, SuspendAnnotation: saved})
		}
		o := object{kind: k, u: u}
		rec := Record{}
		if inRecord {
			rec[o.String()] = recorded
		} else if recorded%2 == 0 {
			rec["Deployment/someone-else"] = recorded
		}
		limit = min(max(limit, 0), MaxSavedReplicas) // as Start bounds it
		patch, what, _ := startPatch(o, rec, limit)
		if patch == nil {
			return
		}
		if !inRecord && len(rec) > 0 {
			t.Fatalf("a controller the record does not name was restored: %v", patch)
		}
		spec := patch["spec"].(map[string]any)
		if n, ok := spec["replicas"].(int64); ok && (n > limit || n < 0) {
			t.Fatalf("restored %d replicas, limit %d (outcome %v)", n, limit, what)
		}
		if s, ok := spec["suspend"].(bool); ok && !s && limit == 0 {
			t.Fatalf("resumed a CronJob with nothing admitted")
		}
	})
}
