package gpu

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

// DeriveOfferings returns the distinct GPU offerings of the schedulable nodes.
//
// A node contributes one offering per GPU resource (nvidia.com/gpu → NVIDIA,
// amd.com/gpu → AMD, or the exalsius.ai/gpu-vendor label's value) whose
// allocatable amount is positive. The model and selector come from the
// exalsius.ai/gpu-model label, else from the first non-empty product label
// of the vendor (see Options), else the model is empty and the selector nil.
// Offerings are identified by (vendor, resource, selector): the same GPU
// labelled differently on two nodes gives two offerings. Total sums the
// allocatable amounts, Nodes counts the nodes, Labels are the GPU labels of
// the offering's first node by name. The result is sorted by model, resource
// name, selector and vendor, and is nil when no node offers a GPU.
func DeriveOfferings(nodes []corev1.Node, opts Options) []infrav1.GPUOffering {
	type entry struct {
		offering infrav1.GPUOffering
		selKey   string
	}
	byKey := map[string]*entry{}
	for _, n := range sortedByName(nodes) {
		if !Schedulable(n) {
			continue
		}
		for _, r := range gpuResources {
			count := allocatable(n, r.resource)
			if count <= 0 {
				continue
			}
			vendor := vendorOf(n, r.vendor)
			model, sel := modelAndSelector(n, vendor, opts)
			selKey := SelectorKey(sel)
			key := strings.Join([]string{vendor, r.resource, selKey}, "\x00")
			e := byKey[key]
			if e == nil {
				e = &entry{
					offering: infrav1.GPUOffering{
						Model:        model,
						Selector:     sel,
						Vendor:       vendor,
						ResourceName: r.resource,
						Labels:       gpuLabels(n),
					},
					selKey: selKey,
				}
				byKey[key] = e
			}
			e.offering.Total += count
			e.offering.Nodes++
		}
	}
	if len(byKey) == 0 {
		return nil
	}
	entries := make([]*entry, 0, len(byKey))
	for _, e := range byKey {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		switch {
		case a.offering.Model != b.offering.Model:
			return a.offering.Model < b.offering.Model
		case a.offering.ResourceName != b.offering.ResourceName:
			return a.offering.ResourceName < b.offering.ResourceName
		case a.selKey != b.selKey:
			return a.selKey < b.selKey
		default:
			return a.offering.Vendor < b.offering.Vendor
		}
	})
	out := make([]infrav1.GPUOffering, len(entries))
	for i, e := range entries {
		out[i] = e.offering
	}
	return out
}

// modelAndSelector applies the model precedence to one node: the canonical
// model label, else the vendor's product labels in order, else nothing.
func modelAndSelector(n *corev1.Node, vendor string, opts Options) (string, map[string]string) {
	if m := n.Labels[ModelLabel]; m != "" {
		return m, map[string]string{ModelLabel: m}
	}
	for _, key := range opts.productLabels(vendor) {
		if m := n.Labels[key]; m != "" {
			return m, map[string]string{key: m}
		}
	}
	return "", nil
}

// gpuLabels copies the node's labels whose keys have a GPU prefix; nil when there are none.
func gpuLabels(n *corev1.Node) map[string]string {
	var out map[string]string
	for k, v := range n.Labels {
		for _, p := range gpuLabelPrefixes {
			if strings.HasPrefix(k, p) {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
				break
			}
		}
	}
	return out
}
