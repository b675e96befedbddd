package regionalroutes

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestShardedCountReadsPastTheCache: with shards, a shard's cache holds
// only its own buckets' workspaces, so the workspaces still routed to a
// regional cluster being deleted are counted on the API server. The
// reconciler here has no cache at all (Client nil): a count that read
// the cache would panic or say 0.
func TestShardedCountReadsPastTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := running.Management.Client
	ns := running.Management.NewNamespace(t, "rr")
	regional := types.NamespacedName{Namespace: ns, Name: "regional"}

	r := &Reconciler{APIReader: c, Sharded: true}
	g.Expect(r.routedThere(ctx, regional)).To(Equal(0))

	for i, name := range []string{"routed-a", "routed-b", "elsewhere"} {
		ws := builder.Workspace(ns, name, "cls", "cluster")
		g.Expect(c.Create(ctx, ws)).To(Succeed())
		target := regional.String()
		if i == 2 {
			target = ns + "/other"
		}
		ws.Status = routedTo(target, 1).Status
		g.Expect(c.Status().Update(ctx, ws)).To(Succeed())
	}
	g.Expect(r.routedThere(ctx, regional)).To(Equal(2))
}
