package k0rdentstatus

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func cond(t, status, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
}

func TestClusterDeploymentState(t *testing.T) {
	now := metav1.NewTime(time.Now())
	cases := []struct {
		name       string
		generation int64
		observed   int64
		deleting   bool
		conds      []metav1.Condition
		want       Phase
		msg        string
	}{
		{name: "no status yet", generation: 1, want: PhaseProvisioning},
		{name: "no Ready condition does not count as ready", generation: 1, observed: 1, want: PhaseProvisioning},
		{name: "ready", generation: 1, observed: 1, want: PhaseReady,
			conds: []metav1.Condition{cond("Ready", "True", "Succeeded", "Object is ready"), cond("CAPIClusterSummary", "True", "InfoReported", "")}},
		{name: "ready without a CAPI cluster (adopted)", generation: 2, observed: 2, want: PhaseReady,
			conds: []metav1.Condition{cond("Ready", "True", "Succeeded", "Object is ready")}},
		{name: "ready for an older generation", generation: 3, observed: 2, want: PhaseProvisioning, msg: "generation 3",
			conds: []metav1.Condition{cond("Ready", "True", "Succeeded", "Object is ready")}},
		{name: "v1.8 provisioning reads Failed but only CAPI is false", generation: 1, observed: 1, want: PhaseProvisioning,
			conds: []metav1.Condition{cond("Ready", "False", "Failed", "cluster provisioning"), cond("CAPIClusterSummary", "False", "IssuesReported", "control plane not ready"), cond("TemplateReady", "True", "Succeeded", "")}},
		{name: "missing template", generation: 1, observed: 1, want: PhaseFailed, msg: "TemplateReady: ClusterTemplate ns/t not found",
			conds: []metav1.Condition{cond("Ready", "False", "Failed", "x"), cond("TemplateReady", "False", "Failed", "ClusterTemplate ns/t not found")}},
		{name: "credential not ready", generation: 1, observed: 1, want: PhaseFailed, msg: "CredentialReady",
			conds: []metav1.Condition{cond("CredentialReady", "False", "Failed", "Credential is not ready")}},
		{name: "v1.9 gives up after 30 minutes", generation: 1, observed: 1, want: PhaseFailed,
			conds: []metav1.Condition{cond("Ready", "False", "Failed", "Cluster is not ready for more than 30m")}},
		{name: "v1.9 progressing", generation: 1, observed: 1, want: PhaseProvisioning,
			conds: []metav1.Condition{cond("Ready", "False", "Progressing", "Cluster is provisioning")}},
		{name: "CAPI summary failed", generation: 1, observed: 1, want: PhaseFailed, msg: "quota exceeded",
			conds: []metav1.Condition{cond("Ready", "False", "Failed", "quota exceeded"), cond("CAPIClusterSummary", "False", "Failed", "quota exceeded")}},
		{name: "deleting", generation: 1, observed: 1, deleting: true, want: PhaseDeleting,
			conds: []metav1.Condition{cond("Ready", "True", "Succeeded", "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cd := &k0rdentv1beta1.ClusterDeployment{}
			cd.Generation = tc.generation
			cd.Status.ObservedGeneration = tc.observed
			cd.Status.Conditions = tc.conds
			if tc.deleting {
				cd.DeletionTimestamp = &now
			}
			got := ClusterDeploymentState(cd)
			g.Expect(got.Phase).To(Equal(tc.want))
			g.Expect(got.Message).To(ContainSubstring(tc.msg))
		})
	}
}

func TestClusterProvisioned(t *testing.T) {
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  bool
	}{
		{"ready", []metav1.Condition{cond("Ready", "True", "Succeeded", ""), cond("CAPIClusterSummary", "True", "", "")}, true},
		{"services not ready on a provisioned cluster", []metav1.Condition{
			cond("Ready", "False", "Progressing", "Services are not ready: 0/1"), cond("CAPIClusterSummary", "True", "", ""),
			cond("ServicesInReadyState", "False", "Failed", "0/1")}, true},
		{"adopted cluster with unready services", []metav1.Condition{
			cond("Ready", "False", "Progressing", "Services are not ready"), cond("TemplateReady", "True", "", ""),
			cond("ServicesInReadyState", "False", "Failed", "0/1")}, true},
		{"provisioning", []metav1.Condition{cond("Ready", "False", "Progressing", ""), cond("CAPIClusterSummary", "False", "Progressing", "")}, false},
		{"template missing", []metav1.Condition{cond("Ready", "False", "Failed", ""), cond("TemplateReady", "False", "Failed", "missing"),
			cond("CAPIClusterSummary", "True", "", "")}, false},
		{"no status", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cd := &k0rdentv1beta1.ClusterDeployment{}
			cd.Generation, cd.Status.ObservedGeneration, cd.Status.Conditions = 1, 1, tc.conds
			got, _ := ClusterProvisioned(cd)
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

// TestOwnState: a Colony's cluster is ready when the cluster and its own
// services are, whatever other ServiceSets deliver onto it.
func TestOwnState(t *testing.T) {
	provisioned := []metav1.Condition{cond("Ready", "False", "Progressing", "Services are not ready: 1/2"),
		cond("CAPIClusterSummary", "True", "", ""), cond("ServicesInReadyState", "False", "Failed", "1/2")}
	svc := func(name, state string) k0rdentv1beta1.ServiceState {
		return k0rdentv1beta1.ServiceState{Name: name, Namespace: "default", State: state}
	}
	cases := []struct {
		name   string
		conds  []metav1.Condition
		own    []string
		states []k0rdentv1beta1.ServiceState
		want   Phase
		msg    string
	}{
		{name: "a workspace deploying on a ready cluster", conds: provisioned,
			states: []k0rdentv1beta1.ServiceState{svc("ws", "Provisioning")}, want: PhaseReady},
		{name: "its own service deployed, a workspace's not", conds: provisioned, own: []string{"gpu-operator"},
			states: []k0rdentv1beta1.ServiceState{svc("gpu-operator", "Deployed"), svc("ws", "Provisioning")}, want: PhaseReady},
		{name: "its own service not deployed yet", conds: provisioned, own: []string{"gpu-operator"},
			states: []k0rdentv1beta1.ServiceState{svc("gpu-operator", "Provisioning")}, want: PhaseProvisioning, msg: "gpu-operator"},
		{name: "its own service not reported yet", conds: provisioned, own: []string{"gpu-operator"}, want: PhaseProvisioning},
		{name: "the cluster still provisioning", conds: []metav1.Condition{cond("Ready", "False", "Progressing", ""),
			cond("CAPIClusterSummary", "False", "Progressing", "control plane")}, want: PhaseProvisioning},
		{name: "a failed template stays failed", conds: []metav1.Condition{cond("Ready", "False", "Failed", ""),
			cond("TemplateReady", "False", "Failed", "missing"), cond("CAPIClusterSummary", "True", "", "")}, want: PhaseFailed},
		{name: "ready", conds: []metav1.Condition{cond("Ready", "True", "Succeeded", "")}, want: PhaseReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cd := &k0rdentv1beta1.ClusterDeployment{}
			cd.Generation, cd.Status.ObservedGeneration, cd.Status.Conditions, cd.Status.Services = 1, 1, tc.conds, tc.states
			for _, n := range tc.own {
				cd.Spec.ServiceSpec.Services = append(cd.Spec.ServiceSpec.Services, k0rdentv1beta1.Service{Name: n, Namespace: "default"})
			}
			got := OwnState(cd)
			g.Expect(got.Phase).To(Equal(tc.want))
			g.Expect(got.Message).To(ContainSubstring(tc.msg))
		})
	}
}
