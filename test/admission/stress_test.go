package admission_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
)

// overbookWatcher follows every change of the namespace's workspaces and
// records any moment at which the GPUs admitted on a node exceed it.
type overbookWatcher struct {
	mu        sync.Mutex
	capacity  map[string]int64
	placement map[string]map[string]int64 // workspace → node → GPUs
	events    int
	peak      map[string]int64
	violation string
}

func watchOverbooking(t *testing.T, ns string, capacity map[string]int64) *overbookWatcher {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	o := &overbookWatcher{capacity: capacity, placement: map[string]map[string]int64{}, peak: map[string]int64{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			ws, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
			if !ok {
				continue
			}
			o.observe(ev.Type, ws)
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return o
}

func (o *overbookWatcher) observe(typ watch.EventType, ws *workspacesv1.WorkspaceDeployment) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events++
	delete(o.placement, ws.Name)
	if a := ws.Status.Admission; typ != watch.Deleted && a != nil {
		p := map[string]int64{}
		for _, s := range a.Placement {
			p[s.Node] += int64(s.Replicas) * a.GPUsPerReplica
		}
		o.placement[ws.Name] = p
	}
	used := map[string]int64{}
	for _, p := range o.placement {
		for node, n := range p {
			used[node] += n
		}
	}
	for node, n := range used {
		o.peak[node] = max(o.peak[node], n)
		if n > o.capacity[node] && o.violation == "" {
			o.violation = fmt.Sprintf("after event %d: %d GPUs admitted on %s, which has %d (%v)", o.events, n, node, o.capacity[node], o.placement)
		}
	}
}

func (o *overbookWatcher) check(g Gomega) {
	o.mu.Lock()
	defer o.mu.Unlock()
	g.Expect(o.violation).To(BeEmpty())
}

// TestConcurrentAdmissionsNeverOverbook creates 24 workspaces at once with
// selectors that overlap on 4 nodes of 2 GPUs (a model on all, a pool on
// half, another pool on a node of each half, or any GPU), asking 1 or 2
// GPUs, against 8 workers, and deletes them in a random order while more
// are admitted. A watch on every workspace change checks that the GPUs
// admitted on a node never exceed it at any moment, and in the end every
// workspace has been admitted once room came.
func TestConcurrentAdmissionsNeverOverbook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "stress", nil)
	cls := class(t, ns)
	capacity := map[string]int64{}
	for i, labels := range []map[string]string{
		{"exalsius.ai/gpu-model": "S1", "half": "a", "pair": "x"},
		{"exalsius.ai/gpu-model": "S1", "half": "a", "pair": "y"},
		{"exalsius.ai/gpu-model": "S1", "half": "b", "pair": "x"},
		{"exalsius.ai/gpu-model": "S1", "half": "b", "pair": "y"},
	} {
		name := fmt.Sprintf("stress-n%d", i)
		gpuNode(t, name, labels, 2)
		capacity[name] = 2
	}
	watcher := watchOverbooking(t, ns, capacity)
	selectors := []gpus{{model: "S1"}, {selector: map[string]string{"half": "a"}}, {selector: map[string]string{"pair": "x"}}, {}}
	var all []*workspacesv1.WorkspaceDeployment
	for i := range 24 {
		req := selectors[rng.IntN(len(selectors))]
		req.count = int32(1 + rng.IntN(2))
		all = append(all, workspace(t, ns, fmt.Sprintf("stress-%02d", i), cls, req))
	}
	admittedOnce := map[string]bool{}
	remaining := append([]*workspacesv1.WorkspaceDeployment(nil), all...)
	for len(remaining) > 0 {
		// Let admissions settle, then delete a random admitted workspace.
		var victim int = -1
		g.Eventually(func(g Gomega) {
			victim = -1
			for i, w := range remaining {
				if get(g, w).Status.Admission != nil {
					admittedOnce[w.Name] = true
					victim = i
				}
			}
			g.Expect(victim).To(BeNumerically(">=", 0), "some workspace is admitted")
		}, timeout, 100*time.Millisecond).Should(Succeed())
		watcher.check(g)
		var admitted []int
		for i, w := range remaining {
			if get(g, w).Status.Admission != nil {
				admittedOnce[w.Name] = true
				admitted = append(admitted, i)
			}
		}
		victim = admitted[rng.IntN(len(admitted))]
		g.Expect(env.Client.Delete(ctx, remaining[victim])).To(Succeed())
		remaining = append(remaining[:victim], remaining[victim+1:]...)
	}
	for _, w := range all {
		deleteAndWait(t, w)
	}
	watcher.check(g)
	g.Expect(admittedOnce).To(HaveLen(len(all)), "every workspace was admitted once room came")
	t.Logf("%d workspace events watched; peak GPUs admitted per node: %v", watcher.events, watcher.peak)
}
