package resources

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// spec is resources of replicas (unset when 0), gpuCount (unset when 0),
// cpu and memory (unset when empty).
func spec(replicas, gpus int32, cpu, memory string) workspacesv1.WorkspaceResourceSpec {
	var res workspacesv1.WorkspaceResourceSpec
	if replicas != 0 {
		res.Replicas = &replicas
	}
	pr := &workspacesv1.PerReplicaResources{}
	if gpus != 0 {
		pr.GPUCount = &gpus
	}
	if cpu != "" {
		pr.CPU = ptr(resource.MustParse(cpu))
	}
	if memory != "" {
		pr.Memory = ptr(resource.MustParse(memory))
	}
	res.PerReplica = pr
	return res
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name  string
		res   workspacesv1.WorkspaceResourceSpec
		wants []string // substrings of the error; none when accepted
	}{
		{name: "nothing asked", res: workspacesv1.WorkspaceResourceSpec{}},
		{name: "the quick start", res: spec(1, 1, "2", "8Gi")},
		{name: "every limit reached", res: spec(1000, 64, "4096", "64Ti")},
		{name: "replicas past the limit", res: spec(1001, 0, "", ""), wants: []string{"replicas 1001", "1 to 1000"}},
		{name: "no replica", res: spec(-1, 0, "", ""), wants: []string{"replicas -1"}},
		{name: "gpuCount past the limit", res: spec(1, 65, "", ""), wants: []string{"perReplica.gpuCount 65", "0 to 64"}},
		{name: "negative gpuCount", res: spec(1, -1, "", ""), wants: []string{"perReplica.gpuCount -1"}},
		{name: "cpu past the limit", res: spec(1, 0, "4097", ""), wants: []string{"perReplica.cpu 4097", "0 to 4096"}},
		{name: "the hostile tenant", res: spec(3, 0, "4000000000000000", "4Pi"),
			wants: []string{"perReplica.cpu 4P", "perReplica.memory 4Pi", "0 to 64Ti"}},
		{name: "a byte past the memory limit", res: spec(1, 0, "", "70368744177665"), wants: []string{"perReplica.memory"}},
		{name: "negative cpu", res: spec(1, 0, "-2", ""), wants: []string{"perReplica.cpu -2"}},
		{name: "negative memory", res: spec(1, 0, "", "-1Gi"), wants: []string{"perReplica.memory -1Gi"}},
	}
	storage := spec(1, 0, "", "")
	storage.PerReplica.Storage = ptr(resource.MustParse("2Pi"))
	cases = append(cases, struct {
		name  string
		res   workspacesv1.WorkspaceResourceSpec
		wants []string
	}{name: "storage past the limit", res: storage, wants: []string{"perReplica.storage 2Pi", "0 to 1Pi"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Check(tc.res)
			if len(tc.wants) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, ErrOutOfBounds)).To(BeTrue(), "got %v", err)
			for _, w := range tc.wants {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

// Within the limits, no product of DemandOf overflows: Check is what makes
// DemandOf safe to call on anything the API accepts.
func TestLimitsKeepDemandWithinInt64(t *testing.T) {
	g := NewWithT(t)
	l := DefaultLimits
	res := spec(l.Replicas, l.GPUsPerReplica, l.CPUPerReplica.String(), l.MemoryPerReplica.String())
	res.PerReplica.Storage = ptr(l.StoragePerReplica.DeepCopy())
	g.Expect(Check(res)).To(Succeed())
	d, err := DemandOf(res)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.GPUs).To(Equal(int64(64000)))
	g.Expect(d.CPU.String()).To(Equal("4096k"))
	g.Expect(d.Memory.String()).To(Equal("64000Ti"))
	g.Expect(d.Storage.String()).To(Equal("1000Pi"))
}
