// Package shard_test proves sharding end to end: apiary managers built from
// this repository run as separate processes, two or three shards with a
// Lease each, against one management control plane with the k0rdent
// stand-in and a child control plane holding a GPU node. Every replica
// traces when it starts and stops acting on a unit (internal/shard
// EnvTrace); the tests check that no two processes ever act on one unit at
// once — while shards start, are killed, and change from two to three —
// that every workspace ends Running, that each unit is held by its desired
// shard, that a tenant's quota over clusters of two shards is never
// exceeded, and that a replica starts child caches only for its own
// clusters.
package shard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// leaseNamespace holds the shards' Leases, for every test: shards of
// different tests share the holder annotations of what earlier tests left.
const leaseNamespace = "apiary-system"

var (
	// running is the suite's world: its work folder holds the manager
	// built from this repository and the replicas' logs.
	theWorld   *world.Running
	env, child *testenv.Environment
)

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "shard", KeepOnFailure: true, Binary: world.Debug,
		Management: true, Child: true, StandIn: standin.InWorld(),
		// Git mode (git_test.go): one branch for every replica, applied by Flux.
		Git:             &world.Git{Repos: []world.Repo{{Name: gitRepo, Branch: gitBranch}}},
		FluxControllers: &testenv.FluxOptions{Namespace: fluxNS}},
		func(r *world.Running) error {
			theWorld, env, child = r, r.Management, r.Child
			ctx := context.Background()
			if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
				return fmt.Errorf("creating the Lease namespace: %w", err)
			}
			// One node with GPUs enough for every test: every
			// ClusterDeployment's kubeconfig reaches this child.
			if err := standin.AddGPUNode(ctx, child.Client, "gpu-node", nil, "nvidia.com/gpu", 1000); err != nil {
				return fmt.Errorf("adding the GPU node: %w", err)
			}
			if err := setUpGit(ctx); err != nil {
				return fmt.Errorf("setting up Git mode: %w", err)
			}
			return nil
		})
}

const timeout = 90 * time.Second

// fleet is a test's namespace with its clusters: standalone
// ClusterDeployments and the clusters of one Colony.
type fleet struct {
	ns    string
	class string
	// units maps each cluster ("ns/name") to its unit.
	units map[string]shard.Unit
	// used are the clusters with workspaces.
	used map[string]bool
}

// newFleet creates a namespace with the templates, a WorkspaceClass, the
// Colony "fleet" with one cluster, and standalone ClusterDeployments
// chosen so that pick accepts their units' desired shards.
func newFleet(t *testing.T, standalone int, pick func(key string, taken []string) bool) *fleet {
	t.Helper()
	f := &fleet{ns: env.NewNamespace(t, "shard"), units: map[string]shard.Unit{}, used: map[string]bool{}}
	builder.Templates(t, env.Client, f.ns)
	f.class = builder.Class(t, env.Client, f.ns, "GPU workspace")
	col := builder.Colony(f.ns, "fleet", "a")
	if err := env.Client.Create(context.Background(), col); err != nil {
		t.Fatalf("creating Colony: %v", err)
	}
	f.units[f.ns+"/fleet-a"] = shard.Unit{Kind: shard.KindColony, NamespacedName: client.ObjectKeyFromObject(col)}
	var taken []string
	for k := 0; len(taken) < standalone; k++ {
		if k > 10000 {
			t.Fatalf("no %d cluster names fit the test", standalone)
		}
		name := fmt.Sprintf("cd-%d", k)
		if !pick(f.ns+"/"+name, taken) {
			continue
		}
		taken = append(taken, f.ns+"/"+name)
		builder.CreateReady(t, env.Client, standin.NewClusterDeployment(f.ns, name, "tpl", "cred"))
		f.units[f.ns+"/"+name] = shard.Unit{Kind: shard.KindClusterDeployment, NamespacedName: client.ObjectKey{Namespace: f.ns, Name: name}}
	}
	return f
}

// clusters are the names of the fleet's clusters.
func (f *fleet) clusters() []string {
	var out []string
	for key := range f.units {
		out = append(out, key[len(f.ns)+1:])
	}
	return out
}

// workspace creates a workspace with one GPU on a cluster of the fleet,
// deleted (and awaited) when the test ends. Its name ends with the
// namespace's suffix: every cluster is the same child control plane, where
// the namespaces ws-<name> of earlier tests never finish terminating.
func (f *fleet) workspace(t *testing.T, name, cd string) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	name += f.ns[strings.LastIndex(f.ns, "-"):]
	f.used[f.ns+"/"+cd] = true
	w := f.newWorkspace(name, cd)
	f.create(t, w)
	return w
}

// newWorkspace is a workspace with one GPU on cluster cd, not created.
func (f *fleet) newWorkspace(name, cd string) *workspacesv1.WorkspaceDeployment {
	return &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: f.class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: cd},
			Resources:            &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](1)}}}}
}

// create creates a workspace, deleted (and awaited) when the test ends.
func (f *fleet) create(t *testing.T, w *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	if err := env.Client.Create(context.Background(), w); err != nil {
		t.Fatalf("creating workspace %s: %v", w.Name, err)
	}
	t.Cleanup(func() { world.DeleteAndWait(t, env.Client, w) })
}

// holders reads the shard claim of every unit of the fleet that some
// shard acts on: the Colony, and the clusters with workspaces.
func (f *fleet) holders(g Gomega) map[string]string {
	out := map[string]string{}
	for cluster, u := range f.units {
		if u.Kind != shard.KindColony && !f.used[cluster] {
			continue
		}
		var obj client.Object = &k0rdentv1beta1.ClusterDeployment{}
		if u.Kind == shard.KindColony {
			obj = &infrav1.Colony{}
		}
		g.Expect(env.Client.Get(context.Background(), u.NamespacedName, obj)).To(Succeed())
		out[u.Key()] = obj.GetAnnotations()[shard.HolderAnnotation]
	}
	return out
}

// expectHeldAsDesired waits until every unit of the fleet is held by its
// desired shard among count.
func (f *fleet) expectHeldAsDesired(t *testing.T, count int) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		want := map[string]string{}
		for cluster, u := range f.units {
			if u.Kind != shard.KindColony && !f.used[cluster] {
				continue
			}
			want[u.Key()] = shard.FormatHolder(shard.Desired(u.Key(), count))
		}
		g.Expect(f.holders(g)).To(Equal(want))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// running waits until every workspace is Running.
func running(t *testing.T, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	for _, w := range ws {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "%s: %s", w.Name, got.Status.Message)
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
}

// noOverlap fails the test when two processes acted on one unit at once.
// Tests run it last, as a cleanup, so that it judges every interval.
func noOverlap(t *testing.T, rec *recorder) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(rec.problems()).To(BeEmpty())
	g.Expect(rec.overlaps()).To(BeEmpty(), "two processes acted on one unit at once")
}
