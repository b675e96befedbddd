package sandbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// TestSandboxHeadless runs the README's first command end to end, headless:
// the quick start Colony becomes ready with its GPU inventory and the
// workspace reaches Running.
func TestSandboxHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	g := NewWithT(t)
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := &bytes.Buffer{}
	err = Run(ctx, Options{Assets: assets, Dir: t.TempDir(), ExitWhenReady: true, Out: out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	text := out.String()
	g.Expect(text).To(ContainSubstring("Colony quickstart: Ready, 1/1 clusters ready"))
	g.Expect(text).To(ContainSubstring("16 × H100-80GB on 2 nodes"))
	g.Expect(text).To(ContainSubstring("WorkspaceDeployment my-notebook: Running"))
}
