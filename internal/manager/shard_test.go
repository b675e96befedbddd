package manager

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/shard"
)

func TestShardedOptions(t *testing.T) {
	inClusterNamespaceFile = filepath.Join(t.TempDir(), "namespace") // none: outside a cluster
	for _, tc := range []struct {
		name    string
		in      Options
		fail    string
		leaseID string
	}{
		{name: "off keeps the options", in: Options{LeaderElectionID: "apiary.infra.exalsius.ai"},
			leaseID: "apiary.infra.exalsius.ai"},
		{name: "a shard holds its own Lease", in: Options{Shard: shard.Config{Index: 1, Shards: 3}, LeaderElectionNamespace: "apiary-system",
			LeaderElectionID: "apiary.infra.exalsius.ai"}, leaseID: "apiary-shard-1"},
		{name: "index out of range", in: Options{Shard: shard.Config{Index: 3, Shards: 3}, LeaderElectionNamespace: "x"}, fail: "not below"},
		{name: "no Lease namespace outside a cluster", in: Options{Shard: shard.Config{Index: 0, Shards: 2}}, fail: "--leader-election-namespace"},
		// Issue 33: shards share the Git branch (test/crash, test/shard prove it).
		{name: "Git delivery", in: Options{Shard: shard.Config{Index: 0, Shards: 2}, LeaderElectionNamespace: "x", Git: &GitOptions{}},
			leaseID: "apiary-shard-0"},
		{name: "tenant Git delivery", in: Options{Shard: shard.Config{Index: 1, Shards: 2}, LeaderElectionNamespace: "x", TenantGit: &GitOptions{}},
			leaseID: "apiary-shard-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := tc.in.sharded()
			if tc.fail != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.fail)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.LeaderElectionID).To(Equal(tc.leaseID))
			g.Expect(out.LeaderElection).To(Equal(tc.in.Shard.Enabled() || tc.in.LeaderElection))
			g.Expect(out.clusterWide()).To(Equal(tc.in.Shard.Index == 0))
		})
	}
}
