package gpu

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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

func TestResourceFor(t *testing.T) {
	for vendor, want := range map[string]string{
		"NVIDIA": ResourceNVIDIA, "nvidia": ResourceNVIDIA, " Nvidia ": ResourceNVIDIA, "": ResourceNVIDIA,
		"AMD": ResourceAMD, "amd": ResourceAMD,
	} {
		got, err := ResourceFor(vendor)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "vendor %q", vendor)
		NewWithT(t).Expect(got).To(Equal(want), "vendor %q", vendor)
	}
	for _, vendor := range []string{"Intel", "nvidia.com/gpu", "AMDX"} {
		_, err := ResourceFor(vendor)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("unknown GPU vendor")), "vendor %q", vendor)
	}
}

func TestPodRequestSaturates(t *testing.T) {
	huge := resource.MustParse("9000000000000000000")
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": huge}}},
		{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": huge}}},
	}}}
	NewWithT(t).Expect(PodRequest(p, "nvidia.com/gpu")).To(BeNumerically("==", int64(math.MaxInt64)))
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
