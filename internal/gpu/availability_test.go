package gpu

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAvailability(t *testing.T) {
	h100 := map[string]string{ModelLabel: "H100"}
	sel := map[string]string{ModelLabel: "H100"}
	tests := []struct {
		name     string
		nodes    []corev1.Node
		pods     []corev1.Pod
		selector map[string]string
		want     Capacity
		found    bool
	}{
		{name: "no nodes", selector: sel},
		{
			name:     "no node carries the selector",
			nodes:    []corev1.Node{node("a", map[string]string{ModelLabel: "A100"}, gpus(ResourceNVIDIA, 8))},
			selector: sel,
		},
		{
			name:     "labels match but the node has no GPU",
			nodes:    []corev1.Node{node("a", h100, nil), node("b", h100, gpus(ResourceNVIDIA, 0))},
			selector: sel,
		},
		{
			name: "unschedulable nodes never match",
			nodes: []corev1.Node{
				node("a", h100, gpus(ResourceNVIDIA, 8), cordoned()),
				node("b", h100, gpus(ResourceNVIDIA, 8), ready(corev1.ConditionFalse)),
			},
			selector: sel,
		},
		{
			name: "every selector entry must match",
			nodes: []corev1.Node{
				node("a", map[string]string{ModelLabel: "H100", "zone": "a"}, gpus(ResourceNVIDIA, 8)),
				node("b", map[string]string{ModelLabel: "H100", "zone": "b"}, gpus(ResourceNVIDIA, 4)),
			},
			selector: map[string]string{ModelLabel: "H100", "zone": "b"},
			want:     Capacity{ResourceName: ResourceNVIDIA, Vendor: VendorNVIDIA, Total: 4, Free: 4, Nodes: 1},
			found:    true,
		},
		{
			name: "an empty selector matches every GPU node",
			nodes: []corev1.Node{
				node("a", nil, gpus(ResourceNVIDIA, 2)),
				node("b", h100, gpus(ResourceNVIDIA, 3), tainted()),
			},
			want:  Capacity{ResourceName: ResourceNVIDIA, Vendor: VendorNVIDIA, Total: 5, Free: 5, Nodes: 2},
			found: true,
		},
		{
			name: "requests of live bound pods on matching nodes are subtracted",
			nodes: []corev1.Node{
				node("a", h100, gpus(ResourceNVIDIA, 8)),
				node("b", h100, gpus(ResourceNVIDIA, 8)),
				node("other", map[string]string{ModelLabel: "A100"}, gpus(ResourceNVIDIA, 8)),
			},
			pods: []corev1.Pod{
				pod("running", "a", corev1.PodRunning, ResourceNVIDIA, container{request: 2, limit: 2}, container{request: 1, limit: 1}),
				pod("pending-bound", "b", corev1.PodPending, ResourceNVIDIA, container{request: 3, limit: 3}),
				pod("limit-only", "b", corev1.PodRunning, ResourceNVIDIA, container{limit: 1}),
				pod("unknown-phase", "b", corev1.PodUnknown, ResourceNVIDIA, container{request: 1}),
				pod("succeeded", "a", corev1.PodSucceeded, ResourceNVIDIA, container{request: 4}),
				pod("failed", "a", corev1.PodFailed, ResourceNVIDIA, container{request: 4}),
				pod("unbound", "", corev1.PodPending, ResourceNVIDIA, container{request: 4}),
				pod("elsewhere", "other", corev1.PodRunning, ResourceNVIDIA, container{request: 4}),
				pod("other-resource", "a", corev1.PodRunning, ResourceAMD, container{request: 4}),
			},
			selector: sel,
			want:     Capacity{ResourceName: ResourceNVIDIA, Vendor: VendorNVIDIA, Total: 16, Free: 8, Nodes: 2},
			found:    true,
		},
		{
			name:  "free is clamped at zero",
			nodes: []corev1.Node{node("a", h100, gpus(ResourceNVIDIA, 1))},
			pods: []corev1.Pod{
				pod("p1", "a", corev1.PodRunning, ResourceNVIDIA, container{request: 1}),
				pod("p2", "a", corev1.PodRunning, ResourceNVIDIA, container{request: 1}),
			},
			selector: sel,
			want:     Capacity{ResourceName: ResourceNVIDIA, Vendor: VendorNVIDIA, Total: 1, Free: 0, Nodes: 1},
			found:    true,
		},
		{
			name: "resource and vendor come from the first matching node by name",
			nodes: []corev1.Node{
				node("b", map[string]string{"pool": "gpu"}, gpus(ResourceNVIDIA, 8)),
				node("a", map[string]string{"pool": "gpu", VendorLabel: "Acme"}, gpus(ResourceAMD, 4)),
			},
			pods:     []corev1.Pod{pod("p", "a", corev1.PodRunning, ResourceAMD, container{request: 1})},
			selector: map[string]string{"pool": "gpu"},
			want:     Capacity{ResourceName: ResourceAMD, Vendor: "Acme", Total: 4, Free: 3, Nodes: 2},
			found:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			nodesBefore := deepCopyNodes(tt.nodes)
			podsBefore := deepCopyPods(tt.pods)
			got, found := Availability(tt.nodes, tt.pods, tt.selector)
			g.Expect(found).To(Equal(tt.found))
			g.Expect(got).To(Equal(tt.want))
			g.Expect(tt.nodes).To(Equal(nodesBefore), "Availability changed its nodes")
			g.Expect(tt.pods).To(Equal(podsBefore), "Availability changed its pods")
		})
	}
}

func TestSelector(t *testing.T) {
	tests := []struct {
		name    string
		gpuType *string
		raw     map[string]string
		want    map[string]string
	}{
		{name: "nothing"},
		{name: "empty gpu type and raw", gpuType: ptr(""), raw: map[string]string{}},
		{name: "gpu type", gpuType: ptr("H100"), want: map[string]string{ModelLabel: "H100"}},
		{
			name: "raw only", raw: map[string]string{NVIDIAProductLabel: "L4"},
			want: map[string]string{NVIDIAProductLabel: "L4"},
		},
		{
			name: "raw entries are merged over the gpu type", gpuType: ptr("H100"),
			raw:  map[string]string{"zone": "a", ModelLabel: "H100-SXM"},
			want: map[string]string{ModelLabel: "H100-SXM", "zone": "a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var rawBefore map[string]string
			if tt.raw != nil {
				rawBefore = map[string]string{}
				for k, v := range tt.raw {
					rawBefore[k] = v
				}
			}
			got := Selector(tt.gpuType, tt.raw)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(tt.raw).To(Equal(rawBefore))
			if got != nil && tt.raw != nil {
				got["added"] = "x"
				g.Expect(tt.raw).NotTo(HaveKey("added"), "the selector aliases the raw map")
			}
		})
	}
}

func TestResourceForVendor(t *testing.T) {
	for vendor, want := range map[string]string{
		"NVIDIA": ResourceNVIDIA, "nvidia": ResourceNVIDIA, " Nvidia ": ResourceNVIDIA,
		"AMD": ResourceAMD, "amd": ResourceAMD, "Intel": "", "": "",
	} {
		NewWithT(t).Expect(ResourceForVendor(vendor)).To(Equal(want), "vendor %q", vendor)
	}
}

func TestSelectorKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(SelectorKey(nil)).To(BeEmpty())
	g.Expect(SelectorKey(map[string]string{})).To(BeEmpty())
	g.Expect(SelectorKey(map[string]string{"b": "2", "a": "1"})).To(Equal(`"a"="1","b"="2"`))
	// Values that contain the separators do not collide.
	g.Expect(SelectorKey(map[string]string{"a": `1","b"="2`})).
		NotTo(Equal(SelectorKey(map[string]string{"a": "1", "b": "2"})))
}

func deepCopyPods(pods []corev1.Pod) []corev1.Pod {
	if pods == nil {
		return nil
	}
	out := make([]corev1.Pod, len(pods))
	for i := range pods {
		pods[i].DeepCopyInto(&out[i])
	}
	return out
}

func TestPodRequestCountsInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	gpus := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	cases := []struct {
		name string
		pod  corev1.PodSpec
		want int64
	}{
		{"containers only", corev1.PodSpec{Containers: []corev1.Container{{Resources: gpus(1)}, {Resources: gpus(2)}}}, 3},
		{"a larger init container wins", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: gpus(4)}},
			Containers:     []corev1.Container{{Resources: gpus(1)}}}, 4},
		{"a smaller init container does not add", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: gpus(1)}},
			Containers:     []corev1.Container{{Resources: gpus(2)}}}, 2},
		{"a sidecar adds to the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: gpus(1), RestartPolicy: &always}},
			Containers:     []corev1.Container{{Resources: gpus(2)}}}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.pod}
			if got := PodRequest(p, "nvidia.com/gpu"); got != tc.want {
				t.Fatalf("PodRequest = %d, want %d", got, tc.want)
			}
		})
	}
}
