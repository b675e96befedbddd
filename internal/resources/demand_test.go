package resources

import (
	"errors"
	"math"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestDemandOf(t *testing.T) {
	g := NewWithT(t)
	d, err := DemandOf(spec(2, 4, "500m", "1536Mi"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Replicas).To(Equal(int64(2)))
	g.Expect(d.GPUsPerReplica).To(Equal(int64(4)))
	g.Expect(d.GPUs).To(Equal(int64(8)))
	g.Expect(d.CPU.String()).To(Equal("1"))
	g.Expect(d.Memory.String()).To(Equal("3Gi"))
	g.Expect(d.Storage).To(BeNil())

	d, err = DemandOf(spec(0, 1, "", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Replicas).To(Equal(int64(1)), "one replica when unset")
	g.Expect(d.GPUs).To(Equal(int64(1)))

	d, err = DemandOf(workspacesv1.WorkspaceResourceSpec{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d).To(Equal(Demand{Replicas: 1}))

	// The hostile tenant: 3 × 4e15 cores is 1.2e19 milli-cores, 3 × 4Pi
	// is 1.35e19 milli-bytes; both wrapped to negative totals before.
	_, err = DemandOf(spec(3, 0, "4000000000000000", "4Pi"))
	g.Expect(errors.Is(err, ErrOverflow)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("perReplica.cpu 4P × replicas 3"))
	g.Expect(err.Error()).NotTo(ContainSubstring("perReplica.memory"), "4Pi × 3 fits in bytes")

	_, err = DemandOf(spec(3, 0, "", "4Ei"))
	g.Expect(errors.Is(err, ErrOverflow)).To(BeTrue(), "3 × 4Ei bytes is past int64")

	_, err = DemandOf(spec(1, 0, "-2", ""))
	g.Expect(errors.Is(err, ErrNegative)).To(BeTrue())
	_, err = DemandOf(spec(-3, 1, "", ""))
	g.Expect(errors.Is(err, ErrNegative)).To(BeTrue())
}

func TestGPUDemand(t *testing.T) {
	g := NewWithT(t)
	g.Expect(GPUDemand(8, 3)).To(Equal(int64(24)))
	g.Expect(GPUDemand(-8, 3)).To(BeZero(), "a negative count asks for no GPUs")
	g.Expect(GPUDemand(8, -3)).To(BeZero())
	g.Expect(GPUDemand(math.MaxInt64, math.MaxInt32)).To(Equal(int64(math.MaxInt64)))
}

func TestAdmissionCharge(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr(resource.MustParse(s)) }
	cases := []struct {
		name      string
		a         *workspacesv1.WorkspaceAdmission
		gpus      int64
		cpu, mem  string // as charged; "" when nil
		errFields []string
	}{
		{name: "no record"},
		{name: "GPUs and totals", a: &workspacesv1.WorkspaceAdmission{GPUsPerReplica: 2, Replicas: 3, CPU: q("6"), Memory: q("24Gi")},
			gpus: 6, cpu: "6", mem: "24Gi"},
		{name: "totals without GPUs", a: &workspacesv1.WorkspaceAdmission{CPU: q("500m")}, cpu: "500m"},
		// What the overflow wrote: 3 × 4e18 milli-cores wrapped below zero.
		{name: "a total that wrapped below zero", a: &workspacesv1.WorkspaceAdmission{CPU: resource.NewMilliQuantity(-6446744073709551616, resource.DecimalSI)},
			cpu: "9223372036854775807m", errFields: []string{"admission.cpu"}},
		{name: "a total past int64", a: &workspacesv1.WorkspaceAdmission{Memory: q("1e30")},
			mem: "9223372036854775807", errFields: []string{"admission.memory"}},
		{name: "negative GPUs per replica", a: &workspacesv1.WorkspaceAdmission{GPUsPerReplica: -1, Replicas: 3},
			gpus: math.MaxInt64, errFields: []string{"admission.gpusPerReplica -1"}},
		{name: "negative replicas", a: &workspacesv1.WorkspaceAdmission{GPUsPerReplica: 1, Replicas: -3},
			gpus: math.MaxInt64, errFields: []string{"replicas -3"}},
		{name: "a GPU product past int64", a: &workspacesv1.WorkspaceAdmission{GPUsPerReplica: math.MaxInt64 / 2, Replicas: 3},
			gpus: math.MaxInt64, errFields: []string{"admission.gpusPerReplica"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := AdmissionCharge(tc.a)
			g.Expect(c.GPUs).To(Equal(tc.gpus))
			for _, f := range []struct {
				got  *resource.Quantity
				want string
			}{{c.CPU, tc.cpu}, {c.Memory, tc.mem}} {
				if f.want == "" {
					g.Expect(f.got).To(BeNil())
				} else {
					g.Expect(f.got).NotTo(BeNil())
					g.Expect(f.got.String()).To(Equal(f.want))
				}
			}
			if len(tc.errFields) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, f := range tc.errFields {
				g.Expect(err.Error()).To(ContainSubstring(f))
			}
		})
	}
}
