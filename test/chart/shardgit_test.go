package chart

import (
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
)

// TestShardsWithGitDelivery: sharding with Git delivery renders one
// Deployment per shard, each delivering through Git with a clone of its own
// (an emptyDir per pod); the chart no longer refuses the combination
// (issue 33), and the manager accepts each shard's flags.
func TestShardsWithGitDelivery(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{
		"sharding": map[string]any{"shards": 2},
		"delivery": map[string]any{"mode": "git", "git": map[string]any{
			"gitRepositoryRef": "flux-system/fleet", "kustomizationRef": "flux-system/apiary", "path": "clusters/mgmt/apiary",
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	deps := find(objs, "Deployment")
	g.Expect(deps).To(HaveLen(2))
	for i, u := range deps {
		d := convert[appsv1.Deployment](g, u)
		args := d.Spec.Template.Spec.Containers[0].Args
		g.Expect(args).To(ContainElements("--delivery=git", "--shards=2", "--shard="+strconv.Itoa(i), "--git-checkout-dir=/var/lib/apiary/git"))
		g.Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", "git"), HaveField("EmptyDir", Not(BeNil())))))
		expectManagerAccepts(t, g, args)
	}
}
