package uninstall

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

func TestMainRefusesBadArguments(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(Main([]string{"everything"}, &out, &errOut)).To(Equal(2))
	g.Expect(errOut.String()).To(ContainSubstring(`unexpected argument "everything"`))
	errOut.Reset()
	g.Expect(Main([]string{"--no-such-flag"}, &out, &errOut)).To(Equal(2))
	errOut.Reset()
	g.Expect(Main([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, &out, &errOut)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("loading kubeconfig"))
	g.Expect(out.String()).To(BeEmpty(), "nothing was done")
}

func TestMainHelp(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(Main([]string{"-h"}, &out, &errOut)).To(Equal(0))
	g.Expect(errOut.String()).To(SatisfyAll(ContainSubstring("Usage: apiary uninstall"), ContainSubstring("-dry-run")))
}
