package sandbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// TestSandboxHeadless runs the README's first command end to end, headless,
// in both delivery modes: the quick start Colony becomes ready with its GPU
// inventory and the workspace reaches Running; in Git mode both are also
// committed and synced, and Flux reports the commit it applied. With two
// shards (make run RUN_ARGS=--shards=2), the one the quick start's Colony
// belongs to does the same.
func TestSandboxHeadless(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	for _, tc := range []struct {
		name, mode string
		shards     int
	}{{"direct", "direct", 1}, {"git", "git", 1}, {"direct-2-shards", "direct", 2}} {
		mode := tc.mode
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			assets, err := testenv.AssetsDir()
			g.Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out := &bytes.Buffer{}
			err = Run(ctx, Options{Assets: assets, Dir: t.TempDir(), ExitWhenReady: true, Out: out,
				Mode: mode, FluxBin: testenv.FluxBinDir(), Shards: tc.shards})
			g.Expect(err).NotTo(HaveOccurred(), out.String())
			text := out.String()
			g.Expect(text).To(ContainSubstring("Colony quickstart: Ready, 1/1 clusters ready"))
			g.Expect(text).To(ContainSubstring("16 × H100-80GB on 2 nodes"))
			g.Expect(text).To(ContainSubstring("WorkspaceDeployment my-notebook: Running"))
			if tc.shards > 1 {
				g.Expect(text).To(ContainSubstring("2 Apiary shards run"))
			}
			if mode == "git" {
				g.Expect(text).To(MatchRegexp(`Colony quickstart: Committed=True \(commit [0-9a-f]{40}\), Synced=True`))
				g.Expect(text).To(MatchRegexp(`WorkspaceDeployment my-notebook: Committed=True \(commit [0-9a-f]{40}\), Synced=True`))
				g.Expect(text).To(MatchRegexp(`Flux applied main@sha1:[0-9a-f]{40}`))
			}
		})
	}
}
