package scaledown

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// release creates a release of every kind in ns and returns its objects
// with their replicas (1 for a running CronJob).
func release(t *testing.T, ns string) map[client.Object]int64 {
	return map[client.Object]int64{
		deployment(t, ns, "web", "a", 3):      3,
		deployment(t, ns, "one", "a", 1):      1,
		deployment(t, ns, "off", "a", 0):      0,
		statefulSet(t, ns, "db", "a", 2):      2,
		replicaSet(t, ns, "rs", "a", 4, nil):  4,
		leaderWorkerSet(t, ns, "llm", "a", 5): 5,
		cronJob(t, ns, "backup", "a", false):  1,
		cronJob(t, ns, "paused", "a", true):   0,
	}
}

// TestACrashLosesNoCount stops (or starts) the first k objects of a
// release one patch each, as a process that dies after k writes would, then
// runs Stop and Start in full: every object ends with its original value.
func TestACrashLosesNoCount(t *testing.T) {
	ctx := context.Background()
	const n = 8
	// rec is the record the caller keeps before Stop writes (Plan).
	var rec Record
	for _, direction := range []struct {
		name   string
		before func(*testing.T, string) // runs before the partial pass
		build  patchFunc
	}{
		{"during Stop", func(*testing.T, string) {}, func(o object) (map[string]any, outcome, error) {
			return stopPatch(o, rec, Record{})
		}},
		{"during Start", func(t *testing.T, ns string) {
			_, err := Stop(ctx, child.Client, ns, "a", rec)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		}, func(o object) (map[string]any, outcome, error) { return startPatch(o, rec, MaxSavedReplicas) }},
	} {
		for k := 0; k <= n; k++ {
			t.Run(fmt.Sprintf("%s after %d writes", direction.name, k), func(t *testing.T) {
				g := NewWithT(t)
				ns := namespace(t)
				want := release(t, ns)
				var err error
				rec, err = Plan(ctx, child.Client, ns, "a", nil)
				g.Expect(err).NotTo(HaveOccurred())
				direction.before(t, ns)

				objs, err := defaultRunner.releaseObjects(ctx, child.Client, ns, "a")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(objs).To(HaveLen(n))
				for _, o := range objs[:k] {
					_, _, err := apply(ctx, child.Client, o, direction.build)
					g.Expect(err).NotTo(HaveOccurred())
				}

				res, err := Stop(ctx, child.Client, ns, "a", rec)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Remaining).To(BeZero())
				for obj := range want {
					n, _ := state(t, obj)
					g.Expect(n).To(BeZero(), "%s after Stop", obj.GetName())
				}
				_, err = Start(ctx, child.Client, ns, "a", res.Record, MaxSavedReplicas)
				g.Expect(err).NotTo(HaveOccurred())
				for obj, replicas := range want {
					n, ann := state(t, obj)
					g.Expect(n).To(Equal(replicas), "%s after Start", obj.GetName())
					g.Expect(ann).NotTo(HaveKey(ReplicasAnnotation))
					g.Expect(ann).NotTo(HaveKey(SuspendAnnotation))
				}
			})
		}
	}
}
