package shard_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/shard"
)

// TestShardsCacheOnlyTheirOwnWorkspaces: two shards label every workspace
// with its unit's bucket, and each caches (apiary_shard_cached_objects)
// only the workspaces and ServiceSets of its own buckets. A label a tenant
// forges — another shard's bucket, or no bucket — is corrected, the
// workspace keeps running, and only the unit's own shard ever acts on it.
func TestShardsCacheOnlyTheirOwnWorkspaces(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) }) // after the replicas stopped, whatever failed
	start := time.Now()
	replicas := []*replica{startReplica(t, rec, "s0", 0, 2), startReplica(t, rec, "s1", 1, 2)}
	f := newFleet(t, 2, perShard(2, 1))
	var ws []*workspacesv1.WorkspaceDeployment
	for i, cd := range f.clusters() {
		ws = append(ws, f.workspace(t, fmt.Sprintf("c-%d", i), cd))
	}
	// Created with a forged label naming a bucket of the other shard.
	cd := f.clusters()[0]
	forged := f.workspaceLabelled(t, "forged", cd, otherShardsBucket(f.units[f.ns+"/"+cd], 2))
	ws = append(ws, forged)
	running(t, ws...)
	f.expectLabelled(t, ws...)
	expectCachesDivided(t, replicas)

	// A tenant relabels a running workspace: to the other shard's bucket,
	// then to no bucket at all.
	w := ws[0]
	for _, v := range []string{otherShardsBucket(f.unitOf(w), 2), "not-a-bucket"} {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, shard.BucketLabel, v)
		g.Expect(env.Client.Patch(context.Background(), w, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		f.expectLabelled(t, w)
		running(t, w)
	}
	expectCachesDivided(t, replicas)
	actors := rec.actors(start)
	for _, u := range f.units {
		g.Expect(actors[u.Kind+" "+u.Key()]).To(Equal(map[int]bool{shard.Desired(u.Key(), 2): true}), "who acted on %s", u)
	}
}

// workspaceLabelled is workspace with the bucket label set to v at creation.
func (f *fleet) workspaceLabelled(t *testing.T, name, cd, v string) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	name += f.ns[strings.LastIndex(f.ns, "-"):]
	f.used[f.ns+"/"+cd] = true
	w := f.newWorkspace(name, cd)
	w.Labels = map[string]string{shard.BucketLabel: v}
	f.create(t, w)
	return w
}

// unitOf is the unit of a workspace of the fleet.
func (f *fleet) unitOf(w *workspacesv1.WorkspaceDeployment) shard.Unit {
	return f.units[f.ns+"/"+w.Spec.ClusterDeploymentRef.Name]
}

// expectLabelled waits until each workspace carries its unit's bucket.
func (f *fleet) expectLabelled(t *testing.T, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	for _, w := range ws {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue(shard.BucketLabel, shard.BucketValue(f.unitOf(w).Key())), "workspace %s", w.Name)
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
}

// otherShardsBucket is a bucket of a shard other than u's desired one.
func otherShardsBucket(u shard.Unit, count int) string {
	want := shard.Desired(u.Key(), count)
	for b := range shard.Buckets {
		if shard.DesiredOfBucket(b, count) != want {
			return shard.FormatBucket(b)
		}
	}
	panic("one shard has every bucket")
}

// expectCachesDivided waits until each replica's cache holds exactly the
// workspaces and ServiceSets labelled with its own buckets, none without a
// bucket, and fewer than all of them.
func expectCachesDivided(t *testing.T, replicas []*replica) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		workspaces := &workspacesv1.WorkspaceDeploymentList{}
		g.Expect(env.Client.List(context.Background(), workspaces)).To(Succeed())
		serviceSets := &k0rdentv1beta1.ServiceSetList{}
		g.Expect(env.Client.List(context.Background(), serviceSets)).To(Succeed())
		for _, r := range replicas {
			c := shard.Config{Index: r.index, Shards: r.count}
			cached := scrapeCached(g, r)
			mine := 0
			for i := range workspaces.Items {
				if c.DesiresBucket(workspaces.Items[i].Labels[shard.BucketLabel]) {
					mine++
				}
			}
			g.Expect(cached["WorkspaceDeployment/own"]).To(Equal(mine), "workspaces cached by %s", r.name)
			g.Expect(cached["WorkspaceDeployment/unbucketed"]).To(Equal(0), "unlabelled workspaces cached by %s", r.name)
			g.Expect(mine).To(BeNumerically("<", len(workspaces.Items)), "replica %s caches every workspace", r.name)
			g.Expect(mine).To(BeNumerically(">", 0), "replica %s caches no workspace", r.name)
			mineSS := 0
			for i := range serviceSets.Items {
				if c.DesiresBucket(serviceSets.Items[i].Labels[shard.BucketLabel]) {
					mineSS++
				}
			}
			g.Expect(cached["ServiceSet/own"]).To(Equal(mineSS), "ServiceSets cached by %s", r.name)
			g.Expect(mineSS).To(BeNumerically(">", 0), "replica %s caches no workspace's ServiceSet", r.name)
		}
	}, timeout, 500*time.Millisecond).Should(Succeed())
}

// scrapeCached reads apiary_shard_cached_objects of a replica: the count
// by "<kind>/<informer>".
func scrapeCached(g Gomega, r *replica) map[string]int {
	resp, err := http.Get("http://" + r.metricsAddr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "apiary_shard_cached_objects{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		var kind, informer string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "kind":
				kind = v
			case "informer":
				informer = v
			}
		}
		n, err := strconv.ParseFloat(value, 64)
		g.Expect(err).NotTo(HaveOccurred())
		out[kind+"/"+informer] = int(n)
	}
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	g.Expect(out).To(HaveKey("WorkspaceDeployment/own"), "replica %s reports no cached workspaces", r.name)
	return out
}
