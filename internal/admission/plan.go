package admission

import (
	"sort"

	"github.com/apiaryhq/apiary/internal/resources"
)

// planner holds the free GPUs of each node while the queue is planned.
type planner struct {
	nodes  []*Node // by name
	byName map[string]*Node
	// free is, per node and resource, the allocatable amount minus bound
	// pods and placed reservations. It may go below zero when pods use
	// more than the node offers.
	free map[string]map[string]int64
	// pods lists, per workspace key, the bound pods it owns.
	pods map[string][]Pod
	// reserved is where each admission's not yet bound replicas sit.
	reserved   map[string][]Slot
	workspaces []*Workspace
}

func newPlanner(s Snapshot) *planner {
	p := &planner{
		byName:     map[string]*Node{},
		free:       map[string]map[string]int64{},
		pods:       map[string][]Pod{},
		reserved:   map[string][]Slot{},
		workspaces: sortedWorkspaces(s.Workspaces),
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if _, dup := p.byName[n.Name]; dup {
			continue // a name is one node; the first entry wins
		}
		p.byName[n.Name] = n
		p.nodes = append(p.nodes, n)
		f := map[string]int64{}
		for _, g := range n.GPUs {
			if _, seen := f[g.Resource]; !seen {
				f[g.Resource] = max(g.Allocatable, 0)
			}
		}
		p.free[n.Name] = f
	}
	sort.SliceStable(p.nodes, func(i, j int) bool { return p.nodes[i].Name < p.nodes[j].Name })
	for _, pod := range s.Pods {
		f, ok := p.free[pod.Node]
		if !ok {
			continue // its node is gone
		}
		for r, v := range pod.GPUs {
			f[r] = resources.SatSub(f[r], max(v, 0))
		}
		if pod.Workspace != "" {
			p.pods[pod.Workspace] = append(p.pods[pod.Workspace], pod)
		}
	}
	return p
}

// allocatable is what a node offers of a resource.
func allocatable(n *Node, resource string) int64 {
	for _, g := range n.GPUs {
		if g.Resource == resource {
			return max(g.Allocatable, 0)
		}
	}
	return 0
}

// matches reports whether a request of a resource may be placed on a node.
func matches(n *Node, sel map[string]string, resource string) bool {
	if !n.Schedulable || allocatable(n, resource) <= 0 {
		return false
	}
	for k, v := range sel {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// resolve finds the resource a request is matched against and the vendor of
// the first matching node: the request's resource, or, when it names none,
// the first GPU resource of the first schedulable node, by name, that
// carries the selector.
func (p *planner) resolve(req Request) (resource, vendor string, ok bool) {
	for _, n := range p.nodes {
		for _, g := range n.GPUs {
			if g.Allocatable <= 0 || (req.Resource != "" && g.Resource != req.Resource) {
				continue
			}
			if matches(n, req.Selector, g.Resource) {
				return g.Resource, g.Vendor, true
			}
		}
	}
	return req.Resource, "", false
}

// firstFit returns the first node, by name, that matches and has room for gpus in avail.
func (p *planner) firstFit(sel map[string]string, resource string, gpus int64, avail func(string) int64) *Node {
	for _, n := range p.nodes {
		if matches(n, sel, resource) && avail(n.Name) >= gpus {
			return n
		}
	}
	return nil
}

// residual returns the slots of an admission that no bound pod of the
// workspace accounts for yet. A pod accounts for one slot when it takes at
// least a replica's GPUs of the admitted resource: a pod on a slot's own node
// first, then a pod the scheduler bound elsewhere. Slots missing from the
// placement (fewer than replicas) are returned without a node. Replicas
// count up to resources.DefaultLimits.Replicas, which the API refuses to exceed:
// a record past it would otherwise size this loop.
func (p *planner) residual(key string, a *Admission, resource string) []Slot {
	per := a.Request.PerReplica
	replicas := min(max(int(a.Request.Replicas), 0), int(resources.DefaultLimits.Replicas))
	slots := make([]Slot, 0, replicas)
	for i := range replicas {
		if i < len(a.Placement) {
			slots = append(slots, Slot{Node: a.Placement[i].Node, GPUs: per})
		} else {
			slots = append(slots, Slot{GPUs: per})
		}
	}
	used := make([]bool, len(p.pods[key]))
	covered := make([]bool, len(slots))
	cover := func(sameNode bool) {
		for i := range slots {
			if covered[i] {
				continue
			}
			for j, pod := range p.pods[key] {
				if used[j] || pod.GPUs[resource] < per || (sameNode && pod.Node != slots[i].Node) {
					continue
				}
				used[j], covered[i] = true, true
				break
			}
		}
	}
	cover(true)
	cover(false)
	var out []Slot
	for i, s := range slots {
		if !covered[i] {
			out = append(out, s)
		}
	}
	return out
}

// reserveAdmitted places the reservations of the admissions in force, first
// come, first served: a slot stays on its node while the node still matches
// and has room, moves first-fit to another matching node otherwise, and is
// dropped when no node can hold it (its node went away and the cluster has
// no room left for it).
func (p *planner) reserveAdmitted(out map[string]Decision) {
	for _, w := range p.workspaces {
		a := w.Admitted
		if a == nil {
			continue
		}
		resource, vendor, _ := p.resolve(a.Request)
		var placed []Slot
		for _, s := range p.residual(w.Key, a, resource) {
			avail := func(node string) int64 { return p.free[node][resource] }
			n := p.byName[s.Node]
			if n == nil || !matches(n, a.Request.Selector, resource) || avail(n.Name) < s.GPUs {
				n = p.firstFit(a.Request.Selector, resource, s.GPUs, avail)
			}
			if n == nil {
				continue
			}
			p.free[n.Name][resource] = resources.SatSub(p.free[n.Name][resource], s.GPUs)
			placed = append(placed, Slot{Node: n.Name, GPUs: s.GPUs})
		}
		p.reserved[w.Key] = placed
		if w.Pending == nil {
			d := p.describe(a.Request, resource, vendor, nil)
			d.Outcome, d.Reason, d.Placement, d.Reserved, d.Room = Admit, Fits, placed, placed, true
			out[w.Key] = d
		}
	}
}

// block is the eligible nodes of an older request that waits (StrictFIFO).
type block struct {
	key   string
	nodes map[string]bool
}

// queue decides the pending requests first come, first served. Each fitting
// request takes its GPUs before the next is looked at; under StrictFIFO a
// request that does not fit blocks every younger one that could use one of
// its nodes. A request waiting for a quota is decided but takes nothing and
// blocks no one.
func (p *planner) queue(policy Policy, out map[string]Decision) {
	var blocks []block
	for _, w := range p.workspaces {
		if w.Pending == nil {
			continue
		}
		d := p.decideQueued(w, policy, &blocks)
		d.Reserved = p.reserved[w.Key]
		out[w.Key] = d
	}
}

// decideQueued decides one pending request at its place in the queue.
func (p *planner) decideQueued(w *Workspace, policy Policy, blocks *[]block) Decision {
	req := *w.Pending
	if req.Demand() <= 0 {
		return Decision{Outcome: Admit, Reason: Fits, Room: true}
	}
	if req.Replicas > resources.DefaultLimits.Replicas || req.PerReplica > int64(resources.DefaultLimits.GPUsPerReplica) {
		return Decision{Outcome: Fail, Reason: OverLimits, Resource: req.Resource}
	}
	resource, vendor, ok := p.resolve(req)
	if !ok {
		return Decision{Outcome: Fail, Reason: NoOffering, Resource: resource}
	}
	eligible := map[string]bool{}
	for _, n := range p.nodes {
		if matches(n, req.Selector, resource) && allocatable(n, resource) >= req.PerReplica {
			eligible[n.Name] = true
		}
	}
	held := p.held(w, resource)
	avail := func(node string) int64 { return resources.SatAdd(p.free[node][resource], held[node]) }
	d := p.describe(req, resource, vendor, avail)
	if len(eligible) == 0 {
		d.Outcome, d.Reason = Fail, ReplicaTooLarge
		return d
	}
	// What can never fit fails before it can block anyone.
	if d.Capacity = p.capacity(eligible, resource, req.PerReplica); d.Capacity < int64(req.Replicas) {
		d.Outcome, d.Reason = Fail, NeverFits
		return d
	}
	// Whatever does not fit blocks the younger requests under StrictFIFO.
	wait := func(reason Reason) Decision {
		d.Outcome, d.Reason = Wait, reason
		if policy == StrictFIFO && !w.QuotaBlocked {
			*blocks = append(*blocks, block{key: w.Key, nodes: eligible})
		}
		return d
	}
	if policy == StrictFIFO {
		for _, b := range *blocks {
			if intersects(b.nodes, eligible) {
				d.Ahead = append(d.Ahead, b.key)
			}
		}
		if len(d.Ahead) > 0 {
			d.Room = p.place(req, resource, avail) != nil
			return wait(Queued)
		}
	}
	placement := p.place(req, resource, avail)
	if placement == nil {
		if d.Free >= req.Demand() {
			return wait(Fragmented)
		}
		return wait(Insufficient)
	}
	d.Outcome, d.Reason, d.Placement, d.Room = Admit, Fits, placement, true
	if !w.QuotaBlocked {
		p.take(placement, resource, held)
	}
	return d
}

// held is what a workspace already holds of a resource, per node: its
// admission's reservations and its own bound pods. Its new request may reuse
// them, since it replaces them; nobody else may until they are gone.
func (p *planner) held(w *Workspace, resource string) map[string]int64 {
	held := map[string]int64{}
	if w.Admitted != nil && p.sameResource(w.Admitted.Request, resource) {
		for _, s := range p.reserved[w.Key] {
			held[s.Node] = resources.SatAdd(held[s.Node], max(s.GPUs, 0))
		}
	}
	for _, pod := range p.pods[w.Key] {
		held[pod.Node] = resources.SatAdd(held[pod.Node], max(pod.GPUs[resource], 0))
	}
	return held
}

// sameResource reports whether an admitted request was for a resource.
func (p *planner) sameResource(a Request, resource string) bool {
	r, _, _ := p.resolve(a)
	return r == resource
}

// place puts each replica on the first matching node with room, or returns
// nil when one does not fit.
func (p *planner) place(req Request, resource string, avail func(string) int64) []Slot {
	taken := map[string]int64{}
	var out []Slot
	for range req.Replicas {
		n := p.firstFit(req.Selector, resource, req.PerReplica, func(node string) int64 { return resources.SatSub(avail(node), taken[node]) })
		if n == nil {
			return nil
		}
		taken[n.Name] = resources.SatAdd(taken[n.Name], req.PerReplica)
		out = append(out, Slot{Node: n.Name, GPUs: req.PerReplica})
	}
	return out
}

// take subtracts a new placement from the free GPUs, beyond what the
// workspace held on each node already.
func (p *planner) take(placement []Slot, resource string, held map[string]int64) {
	use := map[string]int64{}
	for _, s := range placement {
		use[s.Node] = resources.SatAdd(use[s.Node], s.GPUs)
	}
	for node, u := range use {
		p.free[node][resource] = resources.SatSub(p.free[node][resource], max(resources.SatSub(u, held[node]), 0))
	}
}

// capacity is how many replicas of perReplica GPUs the eligible nodes hold
// with nothing else on them: per node, its allocatable GPUs divided by a
// replica's, summed (a replica never spans nodes). perReplica is positive.
func (p *planner) capacity(eligible map[string]bool, resource string, perReplica int64) int64 {
	var n int64
	for name := range eligible {
		n = resources.SatAdd(n, allocatable(p.byName[name], resource)/perReplica)
	}
	return n
}

// describe fills in the counts of a decision: matching nodes, their total,
// and (with avail) what is free on the nodes that can hold a replica.
func (p *planner) describe(req Request, resource, vendor string, avail func(string) int64) Decision {
	d := Decision{Resource: resource, Vendor: vendor}
	for _, n := range p.nodes {
		if !matches(n, req.Selector, resource) {
			continue
		}
		d.Matching++
		d.Total = resources.SatAdd(d.Total, allocatable(n, resource))
		d.LargestNode = max(d.LargestNode, allocatable(n, resource))
		if avail == nil || allocatable(n, resource) < req.PerReplica {
			continue
		}
		f := max(avail(n.Name), 0)
		d.Free = resources.SatAdd(d.Free, f)
		d.Largest = max(d.Largest, f)
	}
	return d
}

func intersects(a, b map[string]bool) bool {
	for k := range b {
		if a[k] {
			return true
		}
	}
	return false
}
