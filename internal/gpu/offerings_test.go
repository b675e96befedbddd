package gpu

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

func TestDeriveOfferings(t *testing.T) {
	h100 := map[string]string{ModelLabel: "H100", NVIDIAProductLabel: "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559"}
	tests := []struct {
		name  string
		nodes []corev1.Node
		opts  Options
		want  []infrav1.GPUOffering
	}{
		{name: "no nodes"},
		{
			name:  "nodes without GPUs",
			nodes: []corev1.Node{node("cpu", map[string]string{"kubernetes.io/os": "linux"}, nil)},
		},
		{
			name: "canonical model label aggregates nodes; labels of the first node by name",
			nodes: []corev1.Node{
				node("b", map[string]string{ModelLabel: "H100", "nvidia.com/gpu.memory": "1"}, gpus(ResourceNVIDIA, 4)),
				node("a", h100, gpus(ResourceNVIDIA, 8)),
			},
			want: []infrav1.GPUOffering{{
				Model: "H100", Selector: map[string]string{ModelLabel: "H100"}, Vendor: VendorNVIDIA,
				ResourceName: ResourceNVIDIA, Total: 12, Nodes: 2, Labels: h100,
			}},
		},
		{
			name:  "NVIDIA product label when the canonical label is absent",
			nodes: []corev1.Node{node("a", map[string]string{NVIDIAProductLabel: "Tesla-T4"}, gpus(ResourceNVIDIA, 1))},
			want: []infrav1.GPUOffering{{
				Model: "Tesla-T4", Selector: map[string]string{NVIDIAProductLabel: "Tesla-T4"}, Vendor: VendorNVIDIA,
				ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1, Labels: map[string]string{NVIDIAProductLabel: "Tesla-T4"},
			}},
		},
		{
			name: "AMD product name, then device id",
			nodes: []corev1.Node{
				node("a", map[string]string{AMDProductNameLabel: "MI300X", AMDDeviceIDLabel: "74a1"}, gpus(ResourceAMD, 8)),
				node("b", map[string]string{AMDDeviceIDLabel: "740f"}, gpus(ResourceAMD, 2)),
			},
			want: []infrav1.GPUOffering{
				{
					Model: "740f", Selector: map[string]string{AMDDeviceIDLabel: "740f"}, Vendor: VendorAMD,
					ResourceName: ResourceAMD, Total: 2, Nodes: 1, Labels: map[string]string{AMDDeviceIDLabel: "740f"},
				},
				{
					Model: "MI300X", Selector: map[string]string{AMDProductNameLabel: "MI300X"}, Vendor: VendorAMD,
					ResourceName: ResourceAMD, Total: 8, Nodes: 1,
					Labels: map[string]string{AMDProductNameLabel: "MI300X", AMDDeviceIDLabel: "74a1"},
				},
			},
		},
		{
			name:  "no model label: empty model and nil selector",
			nodes: []corev1.Node{node("a", map[string]string{"gpu.hami.io/enabled": "true", "zone": "x"}, gpus(ResourceNVIDIA, 2))},
			want: []infrav1.GPUOffering{{
				Vendor: VendorNVIDIA, ResourceName: ResourceNVIDIA, Total: 2, Nodes: 1,
				Labels: map[string]string{"gpu.hami.io/enabled": "true"},
			}},
		},
		{
			name: "empty label values count as absent",
			nodes: []corev1.Node{node("a", map[string]string{ModelLabel: "", NVIDIAProductLabel: "L4", VendorLabel: ""},
				gpus(ResourceNVIDIA, 1))},
			want: []infrav1.GPUOffering{{
				Model: "L4", Selector: map[string]string{NVIDIAProductLabel: "L4"}, Vendor: VendorNVIDIA,
				ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1,
				Labels: map[string]string{ModelLabel: "", NVIDIAProductLabel: "L4", VendorLabel: ""},
			}},
		},
		{
			name: "vendor label overrides verbatim and selects the product labels",
			nodes: []corev1.Node{node("a", map[string]string{VendorLabel: "Acme", NVIDIAProductLabel: "L4"},
				gpus(ResourceNVIDIA, 1))},
			want: []infrav1.GPUOffering{{
				Vendor: "Acme", ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1,
				Labels: map[string]string{VendorLabel: "Acme", NVIDIAProductLabel: "L4"},
			}},
		},
		{
			name: "only schedulable nodes with allocatable GPUs count; taints are ignored",
			nodes: []corev1.Node{
				node("cordoned", h100, gpus(ResourceNVIDIA, 8), cordoned()),
				node("not-ready", h100, gpus(ResourceNVIDIA, 8), ready(corev1.ConditionFalse)),
				node("unknown", h100, gpus(ResourceNVIDIA, 8), ready(corev1.ConditionUnknown)),
				node("zero", h100, gpus(ResourceNVIDIA, 0)),
				node("ready", h100, gpus(ResourceNVIDIA, 1), ready(corev1.ConditionTrue)),
				node("no-condition", h100, gpus(ResourceNVIDIA, 2)),
				node("tainted", h100, gpus(ResourceNVIDIA, 4), tainted()),
			},
			want: []infrav1.GPUOffering{{
				Model: "H100", Selector: map[string]string{ModelLabel: "H100"}, Vendor: VendorNVIDIA,
				ResourceName: ResourceNVIDIA, Total: 7, Nodes: 3, Labels: h100,
			}},
		},
		{
			name: "canonical and vendor-labelled nodes give two offerings",
			nodes: []corev1.Node{
				node("a", map[string]string{ModelLabel: "A100"}, gpus(ResourceNVIDIA, 8)),
				node("b", map[string]string{NVIDIAProductLabel: "A100"}, gpus(ResourceNVIDIA, 8)),
			},
			want: []infrav1.GPUOffering{
				{
					Model: "A100", Selector: map[string]string{ModelLabel: "A100"}, Vendor: VendorNVIDIA,
					ResourceName: ResourceNVIDIA, Total: 8, Nodes: 1, Labels: map[string]string{ModelLabel: "A100"},
				},
				{
					Model: "A100", Selector: map[string]string{NVIDIAProductLabel: "A100"}, Vendor: VendorNVIDIA,
					ResourceName: ResourceNVIDIA, Total: 8, Nodes: 1, Labels: map[string]string{NVIDIAProductLabel: "A100"},
				},
			},
		},
		{
			name:  "a node with both resources contributes to two offerings, sorted by resource",
			nodes: []corev1.Node{node("a", nil, map[string]int64{ResourceNVIDIA: 1, ResourceAMD: 2})},
			want: []infrav1.GPUOffering{
				{Vendor: VendorAMD, ResourceName: ResourceAMD, Total: 2, Nodes: 1},
				{Vendor: VendorNVIDIA, ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1},
			},
		},
		{
			name: "sorted by model",
			nodes: []corev1.Node{
				node("a", map[string]string{ModelLabel: "H100"}, gpus(ResourceNVIDIA, 1)),
				node("b", map[string]string{ModelLabel: "A100"}, gpus(ResourceNVIDIA, 1)),
				node("c", nil, gpus(ResourceNVIDIA, 1)),
			},
			want: []infrav1.GPUOffering{
				{Vendor: VendorNVIDIA, ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1},
				{
					Model: "A100", Selector: map[string]string{ModelLabel: "A100"}, Vendor: VendorNVIDIA,
					ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1, Labels: map[string]string{ModelLabel: "A100"},
				},
				{
					Model: "H100", Selector: map[string]string{ModelLabel: "H100"}, Vendor: VendorNVIDIA,
					ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1, Labels: map[string]string{ModelLabel: "H100"},
				},
			},
		},
		{
			name: "custom product labels; a vendor missing from the map has none",
			opts: Options{ProductLabels: map[string][]string{VendorNVIDIA: {"nvidia.com/gpu.family"}}},
			nodes: []corev1.Node{
				node("a", map[string]string{NVIDIAProductLabel: "L4", "nvidia.com/gpu.family": "ada"}, gpus(ResourceNVIDIA, 1)),
				node("b", map[string]string{AMDProductNameLabel: "MI300X"}, gpus(ResourceAMD, 1)),
			},
			want: []infrav1.GPUOffering{
				{
					Vendor: VendorAMD, ResourceName: ResourceAMD, Total: 1, Nodes: 1,
					Labels: map[string]string{AMDProductNameLabel: "MI300X"},
				},
				{
					Model: "ada", Selector: map[string]string{"nvidia.com/gpu.family": "ada"}, Vendor: VendorNVIDIA,
					ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1,
					Labels: map[string]string{NVIDIAProductLabel: "L4", "nvidia.com/gpu.family": "ada"},
				},
			},
		},
		{
			name:  "an empty product-label map disables the fallback",
			opts:  Options{ProductLabels: map[string][]string{}},
			nodes: []corev1.Node{node("a", map[string]string{NVIDIAProductLabel: "L4"}, gpus(ResourceNVIDIA, 1))},
			want: []infrav1.GPUOffering{{
				Vendor: VendorNVIDIA, ResourceName: ResourceNVIDIA, Total: 1, Nodes: 1,
				Labels: map[string]string{NVIDIAProductLabel: "L4"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := deepCopyNodes(tt.nodes)
			got := DeriveOfferings(tt.nodes, tt.opts)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(tt.nodes).To(Equal(before), "DeriveOfferings changed its input")

			// The input order does not matter.
			reversed := deepCopyNodes(tt.nodes)
			for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
				reversed[i], reversed[j] = reversed[j], reversed[i]
			}
			g.Expect(DeriveOfferings(reversed, tt.opts)).To(Equal(tt.want))
		})
	}
}

func TestDefaultOptionsEqualZeroOptions(t *testing.T) {
	g := NewWithT(t)
	nodes := []corev1.Node{
		node("a", map[string]string{NVIDIAProductLabel: "L4"}, gpus(ResourceNVIDIA, 1)),
		node("b", map[string]string{AMDDeviceIDLabel: "74a1"}, gpus(ResourceAMD, 1)),
	}
	g.Expect(DeriveOfferings(nodes, Options{})).To(Equal(DeriveOfferings(nodes, DefaultOptions())))
	g.Expect(DefaultOptions().ProductLabels).To(Equal(map[string][]string{
		VendorNVIDIA: {NVIDIAProductLabel},
		VendorAMD:    {AMDProductNameLabel, AMDDeviceIDLabel},
	}))
}

func TestDeriveOfferingsResultDoesNotAliasInput(t *testing.T) {
	g := NewWithT(t)
	nodes := []corev1.Node{node("a", map[string]string{ModelLabel: "H100"}, gpus(ResourceNVIDIA, 1))}
	got := DeriveOfferings(nodes, DefaultOptions())
	g.Expect(got).To(HaveLen(1))
	got[0].Labels[ModelLabel] = "changed"
	got[0].Selector[ModelLabel] = "changed"
	g.Expect(nodes[0].Labels).To(Equal(map[string]string{ModelLabel: "H100"}))
}

func deepCopyNodes(nodes []corev1.Node) []corev1.Node {
	if nodes == nil {
		return nil
	}
	out := make([]corev1.Node, len(nodes))
	for i := range nodes {
		nodes[i].DeepCopyInto(&out[i])
	}
	return out
}
