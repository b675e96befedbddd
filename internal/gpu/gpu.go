// Package gpu derives the GPU offerings of a cluster from its Nodes and
// computes the free GPU capacity behind a node selector, with the semantics of
// the exalsius operator: the Colony GPU inventory and the WorkspaceDeployment
// GPU gate share these functions, so what the inventory advertises is what the
// gate matches. Every function is pure and never modifies its arguments, which
// usually come straight from an informer cache.
package gpu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/apiaryhq/apiary/internal/resources"
)

// Extended resources of whole GPUs.
const (
	// ResourceNVIDIA is the extended resource of NVIDIA GPUs.
	ResourceNVIDIA = "nvidia.com/gpu"
	// ResourceAMD is the extended resource of AMD GPUs.
	ResourceAMD = "amd.com/gpu"
)

// Vendors inferred from the extended resources.
const (
	// VendorNVIDIA is the vendor of ResourceNVIDIA.
	VendorNVIDIA = "NVIDIA"
	// VendorAMD is the vendor of ResourceAMD.
	VendorAMD = "AMD"
)

// Node labels read by the derivation.
const (
	// ModelLabel is the canonical GPU model label; it wins over vendor product labels.
	ModelLabel = "exalsius.ai/gpu-model"
	// VendorLabel, when set on a node, overrides the vendor inferred from the resource.
	VendorLabel = "exalsius.ai/gpu-vendor"
	// NVIDIAProductLabel is the product label of NVIDIA's GPU feature discovery.
	NVIDIAProductLabel = "nvidia.com/gpu.product"
	// AMDProductNameLabel is the product-name label of AMD's node labeller.
	AMDProductNameLabel = "amd.com/gpu.product-name"
	// AMDDeviceIDLabel is the device-id label of AMD's node labeller.
	AMDDeviceIDLabel = "amd.com/gpu.device-id"
)

// gpuResources lists the extended resources read, in the order a node that
// offers several is examined.
var gpuResources = []struct{ resource, vendor string }{
	{ResourceNVIDIA, VendorNVIDIA},
	{ResourceAMD, VendorAMD},
}

// gpuLabelPrefixes are the label key prefixes copied onto an offering.
var gpuLabelPrefixes = []string{"nvidia.com/", "amd.com/", "gpu.hami.io/", "exalsius.ai/gpu"}

// Options tunes the offering derivation.
type Options struct {
	// ProductLabels maps a vendor (as inferred, or as overridden by
	// VendorLabel, compared verbatim) to the product labels whose first
	// non-empty value names the model when ModelLabel is absent. A nil map
	// means the defaults of DefaultOptions; in a non-nil map a vendor without
	// an entry has no product label.
	ProductLabels map[string][]string
}

// DefaultOptions returns the exalsius defaults: nvidia.com/gpu.product for
// NVIDIA; amd.com/gpu.product-name, then amd.com/gpu.device-id for AMD.
func DefaultOptions() Options {
	return Options{ProductLabels: defaultProductLabels()}
}

func defaultProductLabels() map[string][]string {
	return map[string][]string{
		VendorNVIDIA: {NVIDIAProductLabel},
		VendorAMD:    {AMDProductNameLabel, AMDDeviceIDLabel},
	}
}

func (o Options) productLabels(vendor string) []string {
	if o.ProductLabels == nil {
		return defaultProductLabels()[vendor]
	}
	return o.ProductLabels[vendor]
}

// DefaultResource is the GPU resource of a request that names no vendor,
// and of a quota limit that names no resource: a bare gpuCount asks for
// NVIDIA GPUs, as the exalsius operator's charts do. Every "no vendor means
// NVIDIA" in Apiary is this constant, through ResourceFor or
// ResourceOrDefault.
const DefaultResource = ResourceNVIDIA

// ResourceOrDefault is an extended resource name, DefaultResource when empty.
func ResourceOrDefault(resource string) string {
	if resource == "" {
		return DefaultResource
	}
	return resource
}

// ResourceFor returns the extended resource of a GPU vendor, compared
// case-insensitively: nvidia.com/gpu for NVIDIA, DefaultResource for no
// vendor, amd.com/gpu for AMD. Any other vendor is an error, never a guess.
func ResourceFor(vendor string) (string, error) {
	v := strings.TrimSpace(vendor)
	if v == "" {
		return DefaultResource, nil
	}
	for _, r := range gpuResources {
		if strings.EqualFold(v, r.vendor) {
			return r.resource, nil
		}
	}
	return "", fmt.Errorf("unknown GPU vendor %q: Apiary knows %s and %s", vendor, VendorNVIDIA, VendorAMD)
}

// Schedulable reports whether a node accepts new pods: it is not cordoned,
// and its Ready condition, when present, is True. Taints are ignored.
func Schedulable(n *corev1.Node) bool {
	if n == nil || n.Spec.Unschedulable {
		return false
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// allocatable returns the node's allocatable amount of a resource, rounded
// down: 0 when absent, negative or beyond int64, never more than it is.
func allocatable(n *corev1.Node, resource string) int64 {
	q, ok := n.Status.Allocatable[corev1.ResourceName(resource)]
	if !ok {
		return 0
	}
	v, err := resources.Whole.Floor(q)
	if err != nil {
		return 0
	}
	return v
}

// vendorOf returns the node's vendor for a resource: the VendorLabel value
// when set, else the inferred one.
func vendorOf(n *corev1.Node, inferred string) string {
	if v := n.Labels[VendorLabel]; v != "" {
		return v
	}
	return inferred
}

// sortedByName returns pointers to the nodes ordered by name, leaving the
// input slice as it is.
func sortedByName(nodes []corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		out[i] = &nodes[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SelectorKey serialises a selector deterministically and injectively: the
// entries sorted by key, each as two Go-quoted strings joined by "=", joined
// by "," (`"k1"="v1","k2"="v2"`). Nil and empty selectors give "". Two
// selectors have the same key exactly when they are equal.
func SelectorKey(sel map[string]string) string {
	if len(sel) == 0 {
		return ""
	}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(sel[k]))
	}
	return b.String()
}

// Selector builds the node selector of a GPU request: gpuType T gives
// {exalsius.ai/gpu-model: T}, and the raw entries are merged over it (raw
// entries win). It returns nil when the result is empty, which means the
// request places on no particular GPU and the gate is skipped.
func Selector(gpuType *string, raw map[string]string) map[string]string {
	out := map[string]string{}
	if gpuType != nil && *gpuType != "" {
		out[ModelLabel] = *gpuType
	}
	for k, v := range raw {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Offer is one GPU resource a node offers.
type Offer struct {
	// Resource is nvidia.com/gpu or amd.com/gpu.
	Resource string
	// Vendor is the node's exalsius.ai/gpu-vendor label, else the vendor of Resource.
	Vendor string
	// Allocatable is the node's allocatable amount, at least 1.
	Allocatable int64
}

// Offers lists the GPU resources a node offers with a positive allocatable
// amount, NVIDIA first.
func Offers(n *corev1.Node) []Offer {
	var out []Offer
	for _, r := range gpuResources {
		if a := allocatable(n, r.resource); a > 0 {
			out = append(out, Offer{Resource: r.resource, Vendor: vendorOf(n, r.vendor), Allocatable: a})
		}
	}
	return out
}

// Resources are the extended GPU resources Apiary counts, NVIDIA first.
func Resources() []string {
	out := make([]string, len(gpuResources))
	for i, r := range gpuResources {
		out[i] = r.resource
	}
	return out
}
