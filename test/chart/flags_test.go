package chart

import (
	"bytes"
	"errors"
	"os/exec"
	"sync"
	"testing"

	"github.com/apiaryhq/apiary/test/world"
	. "github.com/onsi/gomega"
)

var (
	managerBinary    string
	managerBinaryErr error
	buildOnce        sync.Once
)

// builtManager builds the apiary binary once for the package's tests.
func builtManager(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() { managerBinary, managerBinaryErr = world.BuildManager(workDir, world.Debug) })
	if managerBinaryErr != nil {
		t.Fatalf("building the manager: %v", managerBinaryErr)
	}
	return managerBinary
}

// expectManagerAccepts runs the real binary with the chart's args and a
// kubeconfig that does not exist: flags it does not know (or registers
// twice) end it with exit code 2 before it looks for the kubeconfig.
func expectManagerAccepts(t *testing.T, g Gomega, args []string) {
	t.Helper()
	cmd := exec.Command(builtManager(t), append(args, "--kubeconfig=/nonexistent/kubeconfig")...)
	cmd.Env = []string{"KUBECONFIG=/nonexistent/kubeconfig", "HOME=/nonexistent"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	g.Expect(errors.As(err, &exit)).To(BeTrue(), "the manager must stop without a cluster: %v", err)
	g.Expect(exit.ExitCode()).To(Equal(1), "the manager refused the chart's args %v:\n%s", args, stderr.String())
	g.Expect(stderr.String()).To(ContainSubstring("loading kubeconfig"), "the args parsed, then the kubeconfig was looked for")
}

// TestManagerRefusesBadChildServers: an allowed server that is neither a
// host name, an IP address nor a CIDR stops the manager before it starts.
func TestManagerRefusesBadChildServers(t *testing.T) {
	for _, bad := range []string{"https://api.example.com", "api.example.com:6443", "10.0.0.0/33"} {
		g := NewWithT(t)
		cmd := exec.Command(builtManager(t), "--child-server-allow=10.0.0.0/8,"+bad, "--kubeconfig=/nonexistent/kubeconfig")
		cmd.Env = []string{"KUBECONFIG=/nonexistent/kubeconfig", "HOME=/nonexistent"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		g.Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
		g.Expect(exit.ExitCode()).To(Equal(2), "a flag error: %s", stderr.String())
		g.Expect(stderr.String()).To(ContainSubstring("child-server-allow"))
		g.Expect(stderr.String()).NotTo(ContainSubstring("loading kubeconfig"))
	}
}
