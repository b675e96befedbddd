package delivery

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkDirectApplyUnchanged measures a steady-state Apply of 200
// ConfigMaps that the cluster already holds: cache reads and comparisons
// only. It reports the API requests per Apply, which must be zero.
func BenchmarkDirectApplyUnchanged(b *testing.B) {
	ctx, ns, owner, sink := setup(b, "bench")
	objs := make([]*unstructured.Unstructured, 200)
	for i := range objs {
		objs[i] = configMap(ns, fmt.Sprintf("cm-%03d", i), map[string]string{
			"index": fmt.Sprint(i), "payload": fmt.Sprintf("%0100d", i),
		})
	}
	first, err := sink.Apply(ctx, owner, objs, nil)
	if err != nil {
		b.Fatal(err)
	}
	waitCached(b, objs...)

	b.ReportAllocs()
	b.ResetTimer()
	var reqs []string
	reqs = requests.during(func() {
		for b.Loop() {
			res, err := sink.Apply(ctx, owner, objs, first.Inventory)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Changed) != 0 {
				b.Fatalf("steady-state Apply changed %v", res.Changed)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(len(reqs))/float64(b.N), "requests/op")
	if len(reqs) != 0 {
		b.Fatalf("steady-state Apply made %d API requests, e.g. %s", len(reqs), reqs[0])
	}
}
