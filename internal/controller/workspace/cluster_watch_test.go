package workspace

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// randomCluster is a ClusterDeployment "c" with a few of everything an
// update may change: generations, conditions, labels, spec services and
// status.services entries of the workspaces' releases and of the Colony.
func randomCluster(rng *rand.Rand, workspaces []string) *k0rdentv1beta1.ClusterDeployment {
	cd := &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "c",
		Generation: 1 + rng.Int64N(2)}}
	cd.Status.ObservedGeneration = 1 + rng.Int64N(2)
	if rng.IntN(4) == 0 {
		cd.Labels = map[string]string{"region": []string{"eu", "us"}[rng.IntN(2)]}
	}
	if rng.IntN(4) == 0 {
		cd.Spec.ServiceSpec.Services = []k0rdentv1beta1.Service{{Name: "gpu-operator", Template: "gpu-operator-1"}}
	}
	status := func() metav1.ConditionStatus {
		return []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse}[rng.IntN(2)]
	}
	for _, t := range []string{k0rdentv1beta1.ReadyCondition, k0rdentv1beta1.CAPIClusterSummaryCondition, k0rdentv1beta1.ServicesInReadyStateCondition} {
		if rng.IntN(3) > 0 {
			cd.Status.Conditions = append(cd.Status.Conditions, metav1.Condition{Type: t, Status: status(),
				Reason:  []string{k0rdentv1beta1.SucceededReason, k0rdentv1beta1.FailedReason}[rng.IntN(2)],
				Message: fmt.Sprintf("%d/%d", rng.IntN(3), 3)})
		}
	}
	names := []string{"gpu-operator", "monitoring"}
	for _, w := range workspaces {
		names = append(names, plan.ReleaseName("c", w))
	}
	for _, name := range names {
		if rng.IntN(2) == 0 {
			cd.Status.Services = append(cd.Status.Services, k0rdentv1beta1.ServiceState{Name: name, Namespace: "ns",
				Template: name + "-1", State: []string{k0rdentv1beta1.ServiceStateDeployed, k0rdentv1beta1.ServiceStateProvisioning,
					k0rdentv1beta1.ServiceStateFailed}[rng.IntN(3)]})
		}
	}
	return cd
}

// TestPropertyAClusterUpdateReachesEveryWorkspaceItConcerns: for random
// updates of a cluster (each part of it changed or not), every workspace
// for which something its reconcile reads of the cluster changed — whether
// the cluster is provisioned and why not, its metadata, spec and region,
// the state of a Colony's service, or its own release's entry — is
// reconciled; and an update that changes only other workspaces' releases
// reconciles none of the rest (the cost the mapping is there to save).
func TestPropertyAClusterUpdateReachesEveryWorkspaceItConcerns(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "c"}
	workspaces := make([]workspacesv1.WorkspaceDeployment, len(names))
	for i, n := range names {
		workspaces[i].Name, workspaces[i].Namespace = n, "team"
	}
	// reads is what workspace w's reconcile reads of cd.
	reads := func(cd *k0rdentv1beta1.ClusterDeployment, w string) any {
		var colony, own []k0rdentv1beta1.ServiceState
		for _, s := range cd.Status.Services {
			switch {
			case s.Name == plan.ReleaseName("c", w):
				own = append(own, s)
			case s.Name == plan.ReleaseName("c", "a") || s.Name == plan.ReleaseName("c", "b") || s.Name == plan.ReleaseName("c", "c"):
			default:
				colony = append(colony, s)
			}
		}
		return []any{clusterView(cd), colony, own}
	}
	spared := 0
	for i := range 20000 {
		old := randomCluster(rng, names)
		updated := old.DeepCopy()
		if rng.IntN(3) == 0 {
			updated = randomCluster(rng, names)
		} else if len(updated.Status.Services) > 0 {
			// Only a service's state moves, as k0rdent writes it.
			s := &updated.Status.Services[rng.IntN(len(updated.Status.Services))]
			s.State = k0rdentv1beta1.ServiceStateDeployed
			if rng.IntN(2) == 0 {
				for j := range updated.Status.Conditions {
					if updated.Status.Conditions[j].Type == k0rdentv1beta1.ServicesInReadyStateCondition {
						updated.Status.Conditions[j].Message = "3/3"
					}
				}
			}
		}
		keep := concernedBy(old, updated, workspaces)
		for j := range workspaces {
			w := &workspaces[j]
			changed := !equality.Semantic.DeepEqual(reads(old, w.Name), reads(updated, w.Name))
			if changed {
				g.Expect(keep(w)).To(BeTrue(), "case %d: workspace %s reads something that changed and is not reconciled", i, w.Name)
			} else if !keep(w) {
				spared++
			}
		}
	}
	t.Logf("%d workspace reconciles spared", spared)
	g.Expect(spared).To(BeNumerically(">", 1000))
}
