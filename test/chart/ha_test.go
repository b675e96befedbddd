package chart

import (
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestHighAvailability: with more than one replica, each manager Deployment
// (one per shard) gets a PodDisruptionBudget that selects its pods only and
// keeps a standby through a drain, and its pods spread over nodes and zones
// as a preference; one replica gets neither, and both are values-gated.
func TestHighAvailability(t *testing.T) {
	ch := loadChart(t)
	tests := []struct {
		name      string
		vals      map[string]any
		pdbs      int
		spread    []string
		verbatim  bool
		unsatisfy corev1.UnsatisfiableConstraintAction
	}{
		{name: "one replica", vals: map[string]any{}},
		{name: "two replicas", vals: map[string]any{"replicaCount": 2}, pdbs: 1,
			spread: []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, unsatisfy: corev1.ScheduleAnyway},
		{name: "three shards of two", vals: map[string]any{"replicaCount": 2, "sharding": map[string]any{"shards": 3}}, pdbs: 3,
			spread: []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, unsatisfy: corev1.ScheduleAnyway},
		{name: "turned off", vals: map[string]any{"replicaCount": 2,
			"podDisruptionBudget": map[string]any{"enabled": false}, "topologySpread": map[string]any{"enabled": false}}},
		{name: "strict, nodes only", vals: map[string]any{"replicaCount": 3, "podDisruptionBudget": map[string]any{"maxUnavailable": 2},
			"topologySpread": map[string]any{"topologyKeys": []any{"kubernetes.io/hostname"}, "whenUnsatisfiable": "DoNotSchedule"}},
			pdbs: 1, spread: []string{"kubernetes.io/hostname"}, unsatisfy: corev1.DoNotSchedule},
		{name: "verbatim constraints", vals: map[string]any{"replicaCount": 2, "topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}}},
			pdbs: 1, spread: []string{"rack"}, verbatim: true, unsatisfy: corev1.DoNotSchedule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(ch, releaseName, releaseNamespace, tt.vals)
			g.Expect(err).NotTo(HaveOccurred())
			pdbs := find(objs, "PodDisruptionBudget")
			g.Expect(pdbs).To(HaveLen(tt.pdbs))
			deps := find(objs, "Deployment")
			for i, u := range pdbs {
				pdb := convert[policyv1.PodDisruptionBudget](g, u)
				d := convert[appsv1.Deployment](g, deps[i])
				g.Expect(pdb.Name).To(Equal(d.Name), "one per Deployment")
				g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels), "its pods only")
				g.Expect(pdb.Spec.MinAvailable).To(BeNil())
				want := 1
				if m, ok := tt.vals["podDisruptionBudget"].(map[string]any); ok && m["maxUnavailable"] != nil {
					want = m["maxUnavailable"].(int)
				}
				g.Expect(pdb.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(int32(want)))))
				g.Expect(want).To(BeNumerically("<", int(*d.Spec.Replicas)), "a drain leaves a replica running")
			}
			for _, u := range deps {
				d := convert[appsv1.Deployment](g, u)
				cs := d.Spec.Template.Spec.TopologySpreadConstraints
				g.Expect(cs).To(HaveLen(len(tt.spread)))
				for i, c := range cs {
					g.Expect(c.TopologyKey).To(Equal(tt.spread[i]))
					g.Expect(c.WhenUnsatisfiable).To(Equal(tt.unsatisfy))
					if tt.verbatim {
						g.Expect(c.MaxSkew).To(BeEquivalentTo(2))
						continue
					}
					g.Expect(c.MaxSkew).To(BeEquivalentTo(1))
					g.Expect(c.LabelSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels),
						"the Deployment's own pods: a shard's replicas spread among themselves")
				}
			}
			if tt.pdbs > 1 {
				for i, u := range pdbs {
					g.Expect(u.GetName()).To(HaveSuffix("-shard-" + strconv.Itoa(i)))
				}
			}
		})
	}
	_, err := render(ch, releaseName, releaseNamespace, map[string]any{"topologySpread": map[string]any{"whenUnsatisfiable": "Sometimes"}})
	NewWithT(t).Expect(err).To(HaveOccurred(), "the schema rejects an unknown action")
	_, err = render(ch, releaseName, releaseNamespace, map[string]any{"podDisruptionBudget": map[string]any{"maxUnavailable": 0}})
	NewWithT(t).Expect(err).To(HaveOccurred(), "a budget that never allows an eviction blocks drains")
}
