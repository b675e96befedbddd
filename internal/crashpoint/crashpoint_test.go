package crashpoint_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/crashpoint"
)

// TestMain lets this test binary play the process that reaches points.
func TestMain(m *testing.M) {
	if points := os.Getenv("CRASHPOINT_HELPER"); points != "" {
		for _, p := range strings.Split(points, ",") {
			crashpoint.Reach(p)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs this binary reaching the given points, with env.
func helper(t *testing.T, points string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "CRASHPOINT_HELPER="+points)...)
	return cmd
}

func TestReachIsSilentWhenNoPointIsEnabled(t *testing.T) {
	out, err := helper(t, crashpoint.GitCommit+","+crashpoint.GitPush, crashpoint.EnvPoints+"=", crashpoint.EnvPause+"=").CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(string(out)).NotTo(ContainSubstring(crashpoint.Marker))
}

func TestReachPrintsTheListedPoints(t *testing.T) {
	g := NewWithT(t)
	out, err := helper(t, crashpoint.GitCommit+","+crashpoint.GitPush+","+crashpoint.GitPushed,
		crashpoint.EnvPoints+"="+crashpoint.GitPush+", "+crashpoint.GitPushed).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(crashpoint.Marker + crashpoint.GitPush + "\n" + crashpoint.Marker + crashpoint.GitPushed + "\n"))

	out, err = helper(t, crashpoint.GitCommit, crashpoint.EnvPoints+"=*").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(crashpoint.Marker + crashpoint.GitCommit + "\n"))
}

func TestReachPausesAtAPausedPointUntilKilled(t *testing.T) {
	g := NewWithT(t)
	cmd := helper(t, crashpoint.GitCommit+","+crashpoint.GitPush, crashpoint.EnvPause+"="+crashpoint.GitCommit)
	stderr, err := cmd.StderrPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	line, err := bufio.NewReader(stderr).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(line).To(Equal(crashpoint.Marker + crashpoint.GitCommit + "\n"))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	g.Consistently(exited).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())
	g.Expect(cmd.Process.Kill()).To(Succeed())
	g.Eventually(exited).WithTimeout(5 * time.Second).Should(Receive())
}
