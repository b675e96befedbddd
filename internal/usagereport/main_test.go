package usagereport

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

func TestMainRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"everything"},
		{"--no-such-flag"},
		{"--from", "yesterday"},
		{"--from", "2026-12-05", "--to", "2026-12-04"},
		{"-o", "yaml"},
	} {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		g.Expect(Main(args, &out, &errOut)).To(Equal(2), "%v", args)
		g.Expect(out.String()).To(BeEmpty())
	}
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(Main([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, &out, &errOut)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("loading kubeconfig"))
}

func TestMainHelp(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(Main([]string{"-h"}, &out, &errOut)).To(Equal(0))
	g.Expect(errOut.String()).To(SatisfyAll(ContainSubstring("Usage: apiary usage"), ContainSubstring("-from"), ContainSubstring("-tenant")))
}

func TestTableInHours(t *testing.T) {
	g := NewWithT(t)
	cpu, mem := resource.MustParse("7200"), resource.MustParse("7730941132800") // 2 core-hours, 2 GiB-hours
	var out bytes.Buffer
	printTable(&out, []Row{{Tenant: "team-a", From: "2026-12-01", To: "2026-12-08", Complete: true, Usage: commonv1.ResourceUsage{
		GPUs: []commonv1.GPUSeconds{{ResourceName: "nvidia.com/gpu", Model: "H100", Seconds: 5400}, {ResourceName: "amd.com/gpu", Seconds: 3600}},
		CPU:  &cpu, Memory: &mem}}, {Tenant: "team-b", Complete: false}})
	g.Expect(out.String()).To(ContainSubstring("nvidia.com/gpu/H100=1.50,amd.com/gpu=1.00"))
	g.Expect(out.String()).To(MatchRegexp(`team-a .* 2\.00 +2\.00`))
	g.Expect(out.String()).To(MatchRegexp(`team-b .* 0 +0\.00 +0\.00 +days before the oldest kept are missing`))
}
