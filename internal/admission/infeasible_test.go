package admission

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// randomCluster draws a small cluster: nodes of one or two GPU resources and
// two models, some cordoned, some pods bound, and workspaces with pending
// requests (some also holding an admission) created one second apart.
func randomCluster(rng *rand.Rand) Snapshot {
	var s Snapshot
	resources := []string{"nvidia.com/gpu", "amd.com/gpu"}
	for i := range 1 + rng.IntN(4) {
		r := resources[rng.IntN(2)]
		s.Nodes = append(s.Nodes, Node{
			Name:        fmt.Sprintf("n%d", i),
			Labels:      map[string]string{"model": []string{"A", "B"}[rng.IntN(2)]},
			Schedulable: rng.IntN(6) > 0,
			GPUs:        []GPU{{Resource: r, Vendor: r[:3], Allocatable: int64(rng.IntN(9))}},
		})
		if rng.IntN(3) == 0 {
			s.Pods = append(s.Pods, Pod{Node: s.Nodes[i].Name, GPUs: map[string]int64{r: int64(rng.IntN(5))}})
		}
	}
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 1 + rng.IntN(6) {
		w := Workspace{Key: fmt.Sprintf("ns/w%d", i), UID: fmt.Sprint(i), Created: t0.Add(time.Duration(i) * time.Second)}
		req := randomRequest(rng)
		w.Pending = &req
		if rng.IntN(4) == 0 {
			a := randomRequest(rng)
			w.Admitted = &Admission{Request: a}
		}
		w.QuotaBlocked = rng.IntN(8) == 0
		s.Workspaces = append(s.Workspaces, w)
	}
	return s
}

func randomRequest(rng *rand.Rand) Request {
	req := Request{PerReplica: 1 + int64(rng.IntN(8)), Replicas: 1 + int32(rng.IntN(4))}
	switch rng.IntN(3) {
	case 0:
		req.Selector = map[string]string{"model": []string{"A", "B"}[rng.IntN(2)]}
	case 1:
		req.Resource = []string{"nvidia.com/gpu", "amd.com/gpu"}[rng.IntN(2)]
	}
	return req
}

// aloneOnEmpty decides a request as the only one on the cluster's nodes,
// with no pod bound and nothing admitted.
func aloneOnEmpty(nodes []Node, req Request, policy Policy) Decision {
	return Decide(Snapshot{Nodes: nodes, Workspaces: []Workspace{{Key: "k", UID: "k", Pending: &req}}}, "k", policy)
}

// TestInfeasibleProperties checks, over random clusters and queues, under
// both policies, against an oracle (the request alone on the empty
// cluster): a request that fits the empty cluster never fails, one that
// does not always fails (never waits), and an infeasible request changes
// no other decision: the plan without it is the same for everyone else, so
// it never blocks a younger request.
func TestInfeasibleProperties(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 31))
		snap := randomCluster(rng)
		for _, policy := range []Policy{StrictFIFO, BestEffortFIFO} {
			plan := Plan(snap, policy)
			var kept []Workspace
			for _, w := range snap.Workspaces {
				d, alone := plan[w.Key], aloneOnEmpty(snap.Nodes, *w.Pending, policy)
				feasible := alone.Outcome == Admit // the oracle: it fits the empty cluster
				if feasible && d.Outcome == Fail {
					t.Fatalf("seed %d %s: %s fits the empty cluster but failed: %s", seed, policy, w.Key, d.Reason)
				}
				if !feasible && d.Outcome != Fail {
					t.Fatalf("seed %d %s: %s cannot fit the empty cluster but was decided %s/%s", seed, policy, w.Key, d.Outcome, d.Reason)
				}
				if d.Reason == NeverFits && d.Capacity >= int64(w.Pending.Replicas) {
					t.Fatalf("seed %d %s: %s NeverFits with capacity %d for %d replicas", seed, policy, w.Key, d.Capacity, w.Pending.Replicas)
				}
				if !feasible {
					if w.Admitted == nil {
						continue // dropped: the plan without it must match
					}
					w.Pending = nil // its admission in force still holds GPUs
				}
				kept = append(kept, w)
			}
			without := Plan(Snapshot{Nodes: snap.Nodes, Pods: snap.Pods, Workspaces: kept}, policy)
			for _, w := range kept {
				if w.Pending == nil {
					continue
				}
				if !reflect.DeepEqual(plan[w.Key], without[w.Key]) {
					t.Fatalf("seed %d %s: a NeverFits request changed %s's decision:\nwith    %+v\nwithout %+v", seed, policy, w.Key, plan[w.Key], without[w.Key])
				}
			}
		}
	}
}

// TestNeverFitsDoesNotBlockYounger is the case: 3 replicas of 8 GPUs
// on two 8-GPU nodes fails with the shortfall, and a younger 1×8 request
// is admitted under StrictFIFO.
func TestNeverFitsDoesNotBlockYounger(t *testing.T) {
	g := NewWithT(t)
	nodes := []Node{
		{Name: "a", Schedulable: true, GPUs: []GPU{{Resource: "nvidia.com/gpu", Vendor: "NVIDIA", Allocatable: 8}}},
		{Name: "b", Schedulable: true, GPUs: []GPU{{Resource: "nvidia.com/gpu", Vendor: "NVIDIA", Allocatable: 8}}},
	}
	t0 := time.Unix(1_700_000_000, 0)
	big := Request{Resource: "nvidia.com/gpu", PerReplica: 8, Replicas: 3}
	small := Request{Resource: "nvidia.com/gpu", PerReplica: 8, Replicas: 1}
	plan := Plan(Snapshot{Nodes: nodes, Workspaces: []Workspace{
		{Key: "ns/big", UID: "1", Created: t0, Pending: &big},
		{Key: "ns/small", UID: "2", Created: t0.Add(time.Second), Pending: &small},
	}}, StrictFIFO)
	g.Expect(plan["ns/big"].Outcome).To(Equal(Fail))
	g.Expect(plan["ns/big"].Reason).To(Equal(NeverFits))
	g.Expect(plan["ns/big"].Capacity).To(Equal(int64(2)))
	g.Expect(plan["ns/big"].Total).To(Equal(int64(16)))
	g.Expect(plan["ns/small"].Outcome).To(Equal(Admit))
}
