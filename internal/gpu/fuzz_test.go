package gpu

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// fuzzLabelKeys are the label keys the fuzzer picks from, so that it hits
// the interesting ones often.
var fuzzLabelKeys = []string{
	ModelLabel, VendorLabel, NVIDIAProductLabel, AMDProductNameLabel, AMDDeviceIDLabel,
	"gpu.hami.io/x", "zone", "exalsius.ai/gpu-memory",
}

var fuzzValues = []string{"", "H100", "A100", "NVIDIA", "AMD", "Acme", "a,b", `"=`}

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct{ data []byte }

func (r *byteReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

// decodeCluster turns fuzz bytes into nodes and pods.
func decodeCluster(data []byte, names string) ([]corev1.Node, []corev1.Pod) {
	r := &byteReader{data: data}
	nameOf := func(b byte) string {
		if len(names) == 0 {
			return string(rune('a' + b%4))
		}
		i := int(b) % len(names)
		return names[i:] // duplicates and empty names are allowed
	}
	var nodes []corev1.Node
	for range int(r.next() % 6) {
		labels := map[string]string{}
		for range int(r.next() % 4) {
			labels[fuzzLabelKeys[int(r.next())%len(fuzzLabelKeys)]] = fuzzValues[int(r.next())%len(fuzzValues)]
		}
		flags := r.next()
		var opts []nodeOpt
		if flags&1 != 0 {
			opts = append(opts, cordoned())
		}
		if flags&2 != 0 {
			opts = append(opts, ready(corev1.ConditionStatus([]string{"True", "False", "Unknown"}[int(flags>>4)%3])))
		}
		alloc := map[string]int64{}
		if flags&4 != 0 {
			alloc[ResourceNVIDIA] = int64(int8(r.next()))
		}
		if flags&8 != 0 {
			alloc[ResourceAMD] = int64(int8(r.next()))
		}
		nodes = append(nodes, node(nameOf(r.next()), labels, alloc, opts...))
	}
	var pods []corev1.Pod
	for range int(r.next() % 6) {
		phase := []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed}[r.next()%4]
		res := []string{ResourceNVIDIA, ResourceAMD}[r.next()%2]
		pods = append(pods, pod("p", nameOf(r.next()), phase, res,
			container{request: int64(r.next() % 4), limit: int64(r.next() % 4)}))
	}
	return nodes, pods
}

// FuzzDeriveOfferings checks the invariants of DeriveOfferings and
// Availability on arbitrary clusters: no panic, inputs unchanged, sorted
// distinct offerings whose totals add up to the schedulable GPUs, and a
// capacity whose free amount lies between 0 and its total.
func FuzzDeriveOfferings(f *testing.F) {
	f.Add([]byte{2, 1, 0, 1, 4, 8, 0, 1, 1, 2, 4, 3, 1, 0, 2, 1, 0}, "node")
	f.Add([]byte{5, 3, 1, 2, 2, 3, 6, 5, 14, 200, 100, 3}, "ab")
	f.Fuzz(func(t *testing.T, data []byte, names string) {
		nodes, pods := decodeCluster(data, names)
		nodesBefore, podsBefore := deepCopyNodes(nodes), deepCopyPods(pods)

		offerings := DeriveOfferings(nodes, DefaultOptions())
		var wantTotal, wantNodes, gotTotal, gotNodes int64
		for i := range nodes {
			if !Schedulable(&nodes[i]) {
				continue
			}
			for _, r := range gpuResources {
				if a := allocatable(&nodes[i], r.resource); a > 0 {
					wantTotal += a
					wantNodes++
				}
			}
		}
		seen := map[string]bool{}
		for i, o := range offerings {
			gotTotal += o.Total
			gotNodes += int64(o.Nodes)
			if o.Total <= 0 || o.Nodes <= 0 || o.Vendor == "" || !knownVendor(vendorForResource(o.ResourceName)) {
				t.Fatalf("offering %d is malformed: %+v", i, o)
			}
			if (o.Model == "") != (o.Selector == nil) {
				t.Fatalf("offering %d: model %q with selector %v", i, o.Model, o.Selector)
			}
			id := o.Vendor + "\x00" + o.ResourceName + "\x00" + SelectorKey(o.Selector)
			if seen[id] {
				t.Fatalf("offering %d is a duplicate: %+v", i, o)
			}
			seen[id] = true
		}
		if !sort.SliceIsSorted(offerings, func(i, j int) bool {
			a, b := offerings[i], offerings[j]
			if a.Model != b.Model {
				return a.Model < b.Model
			}
			if a.ResourceName != b.ResourceName {
				return a.ResourceName < b.ResourceName
			}
			return SelectorKey(a.Selector) < SelectorKey(b.Selector)
		}) {
			t.Fatalf("offerings are not sorted: %+v", offerings)
		}
		if gotTotal != wantTotal || gotNodes != wantNodes {
			t.Fatalf("offerings count %d GPUs on %d node-resources, want %d on %d", gotTotal, gotNodes, wantTotal, wantNodes)
		}

		for _, o := range offerings {
			if o.Selector != nil && !matchesGPUNode(nodes, o.Selector) {
				t.Fatalf("the selector of offering %+v matches no schedulable GPU node", o)
			}
		}
		if !equality.Semantic.DeepEqual(nodes, nodesBefore) || !equality.Semantic.DeepEqual(pods, podsBefore) {
			t.Fatal("inputs were modified")
		}
	})
}

func vendorForResource(resourceName string) string {
	for _, r := range gpuResources {
		if r.resource == resourceName {
			return r.vendor
		}
	}
	return ""
}

// matchesGPUNode reports whether a selector places on a schedulable node
// that offers GPUs.
func matchesGPUNode(nodes []corev1.Node, selector map[string]string) bool {
	for i := range nodes {
		n := &nodes[i]
		if !Schedulable(n) {
			continue
		}
		all := true
		for k, v := range selector {
			if got, ok := n.Labels[k]; !ok || got != v {
				all = false
			}
		}
		if !all {
			continue
		}
		for _, r := range gpuResources {
			if allocatable(n, r.resource) > 0 {
				return true
			}
		}
	}
	return false
}

func knownVendor(v string) bool {
	_, err := ResourceFor(v)
	return v != "" && err == nil
}
