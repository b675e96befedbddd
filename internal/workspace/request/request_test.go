package request

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/gpu"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestOf(t *testing.T) {
	nvidia, amd := workspacesv1.GPUVendorNVIDIA, workspacesv1.GPUVendorAMD
	cases := []struct {
		name string
		res  workspacesv1.WorkspaceResourceSpec
		want Request
		gpu  *admission.Request
	}{
		{name: "nothing asked", res: workspacesv1.WorkspaceResourceSpec{}, want: Request{Replicas: 1}},
		{name: "one replica when unset, no vendor leaves the resource to the nodes",
			res:  workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](2)}},
			want: Request{Replicas: 1, PerReplica: Amounts{GPUs: 2}, Total: Amounts{GPUs: 2}},
			gpu:  &admission.Request{PerReplica: 2, Replicas: 1}},
		{name: "totals are per replica times replicas",
			res: workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](3), PerReplica: &workspacesv1.PerReplicaResources{
				GPUCount: ptr.To[int32](4), GPUVendor: &amd, GPUType: ptr.To("MI300X"), GPUNodeSelector: map[string]string{"zone": "a"},
				CPU: q("1500m"), Memory: q("2Gi"), Storage: q("10Gi")}},
			want: Request{Replicas: 3, Vendor: "AMD", Resource: gpu.ResourceAMD, Type: "MI300X",
				Selector:   map[string]string{gpu.ModelLabel: "MI300X", "zone": "a"},
				PerReplica: Amounts{GPUs: 4, CPU: q("1500m"), Memory: q("2Gi"), Storage: q("10Gi")},
				Total:      Amounts{GPUs: 12, CPU: q("4500m"), Memory: q("6Gi"), Storage: q("30Gi")}},
			gpu: &admission.Request{Selector: map[string]string{gpu.ModelLabel: "MI300X", "zone": "a"}, Resource: gpu.ResourceAMD, PerReplica: 4, Replicas: 3}},
		{name: "a vendor pins its resource",
			res:  workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](1), GPUVendor: &nvidia}},
			want: Request{Replicas: 1, Vendor: "NVIDIA", Resource: gpu.ResourceNVIDIA, PerReplica: Amounts{GPUs: 1}, Total: Amounts{GPUs: 1}},
			gpu:  &admission.Request{Resource: gpu.ResourceNVIDIA, PerReplica: 1, Replicas: 1}},
		{name: "zero GPUs ask for none",
			res:  workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](2), PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](0), CPU: q("1")}},
			want: Request{Replicas: 2, PerReplica: Amounts{CPU: q("1")}, Total: Amounts{CPU: q("2000m")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Of(tc.res)
			g.Expect(got.Err).NotTo(HaveOccurred())
			g.Expect(got.Replicas).To(Equal(tc.want.Replicas))
			g.Expect(got.Vendor).To(Equal(tc.want.Vendor))
			g.Expect(got.Resource).To(Equal(tc.want.Resource))
			g.Expect(got.Type).To(Equal(tc.want.Type))
			g.Expect(got.Selector).To(Equal(tc.want.Selector))
			expectAmounts(g, got.PerReplica, tc.want.PerReplica)
			expectAmounts(g, got.Total, tc.want.Total)
			g.Expect(got.GPU()).To(Equal(tc.gpu))
			g.Expect(got.HasGPUs()).To(Equal(tc.gpu != nil))
		})
	}
}

func expectAmounts(g Gomega, got, want Amounts) {
	g.Expect(got.GPUs).To(Equal(want.GPUs))
	for _, p := range [][2]*resource.Quantity{{got.CPU, want.CPU}, {got.Memory, want.Memory}, {got.Storage, want.Storage}} {
		if p[1] == nil {
			g.Expect(p[0]).To(BeNil())
			continue
		}
		g.Expect(p[0]).NotTo(BeNil())
		g.Expect(p[0].Cmp(*p[1])).To(BeZero(), "%s, want %s", p[0], p[1])
	}
}

// TestTotalGPUs is what plan.Demand was tested for: replicas (1 when
// unset) times gpuCount, never negative, saturated at math.MaxInt64.
func TestTotalGPUs(t *testing.T) {
	g := NewWithT(t)
	res := func(replicas *int32, gpus int32) workspacesv1.WorkspaceResourceSpec {
		return workspacesv1.WorkspaceResourceSpec{Replicas: replicas, PerReplica: &workspacesv1.PerReplicaResources{GPUCount: &gpus}}
	}
	three, most, none := int32(3), int32(math.MaxInt32), int32(-1)
	g.Expect(Of(res(nil, 2)).Total.GPUs).To(Equal(int64(2)), "one replica when unset")
	g.Expect(Of(res(&three, 8)).Total.GPUs).To(Equal(int64(24)))
	g.Expect(Of(res(&most, math.MaxInt32)).Total.GPUs).To(Equal(int64(math.MaxInt32) * math.MaxInt32))
	g.Expect(Of(res(&three, -8)).Total.GPUs).To(BeZero(), "never negative")
	g.Expect(Of(res(&none, 8)).Total.GPUs).To(BeZero())
	g.Expect(Of(workspacesv1.WorkspaceResourceSpec{}).Total.GPUs).To(BeZero())
}

// TestNoVendorChargesTheDefaultResource: a bare gpuCount is placed on what
// the nodes offer, and charged to quotas as gpu.DefaultResource.
func TestNoVendorChargesTheDefaultResource(t *testing.T) {
	g := NewWithT(t)
	r := Of(workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](2), PerReplica: &workspacesv1.PerReplicaResources{
		GPUCount: ptr.To[int32](3), CPU: q("1"), GPUType: ptr.To("H100")}})
	g.Expect(r.GPU().Resource).To(BeEmpty(), "the nodes decide")
	c := r.Quota("ns", "w", "uid")
	g.Expect(c.ResourceName).To(Equal(gpu.DefaultResource))
	g.Expect(c.GPUs).To(BeEquivalentTo(6))
	g.Expect(c.Selector).To(Equal(map[string]string{gpu.ModelLabel: "H100"}))
	g.Expect(c.CPU.Cmp(resource.MustParse("2"))).To(BeZero())
	g.Expect(r.What()).To(Equal("H100"))
	g.Expect(Of(workspacesv1.WorkspaceResourceSpec{}).Quota("ns", "w", "uid").ResourceName).To(BeEmpty(), "no GPUs, no resource")
}
