package standin

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func TestSetReady(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
	}
	const (
		tr = metav1.ConditionTrue
		fa = metav1.ConditionFalse
		un = metav1.ConditionUnknown
	)
	tests := []struct {
		name   string
		conds  []metav1.Condition
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{name: "no conditions", status: un, reason: k0rdentv1beta1.ProgressingReason, msg: "Object is progressing"},
		{
			name: "all true",
			conds: []metav1.Condition{
				cond(k0rdentv1beta1.TemplateReadyCondition, tr, "Succeeded", ""),
				cond(k0rdentv1beta1.CAPIClusterSummaryCondition, tr, "Succeeded", ""),
			},
			status: tr, reason: k0rdentv1beta1.SucceededReason, msg: ReadyMessage,
		},
		{
			name: "false conditions fail with joined messages",
			conds: []metav1.Condition{
				cond(k0rdentv1beta1.TemplateReadyCondition, fa, "Failed", "template bad"),
				cond(k0rdentv1beta1.CredentialReadyCondition, fa, "Failed", "credential bad"),
				cond(k0rdentv1beta1.CAPIClusterSummaryCondition, fa, "Progressing", "provisioning"),
			},
			status: fa, reason: k0rdentv1beta1.FailedReason, msg: "template bad; credential bad",
		},
		{
			name:   "provisioning is progressing",
			conds:  []metav1.Condition{cond(k0rdentv1beta1.CAPIClusterSummaryCondition, fa, "Progressing", "provisioning")},
			status: fa, reason: k0rdentv1beta1.ProgressingReason, msg: "provisioning",
		},
		{
			name:   "failed cluster fails",
			conds:  []metav1.Condition{cond(k0rdentv1beta1.CAPIClusterSummaryCondition, fa, "Failed", "boom")},
			status: fa, reason: k0rdentv1beta1.FailedReason, msg: "boom",
		},
		{
			name: "unready services are progressing",
			conds: []metav1.Condition{
				cond(k0rdentv1beta1.CAPIClusterSummaryCondition, tr, "Succeeded", ""),
				cond(k0rdentv1beta1.ServicesInReadyStateCondition, fa, "Failed", "1/2"),
			},
			status: fa, reason: k0rdentv1beta1.ProgressingReason, msg: "Services are not ready: 1/2",
		},
		{
			name: "deleting wins",
			conds: []metav1.Condition{
				cond(k0rdentv1beta1.TemplateReadyCondition, fa, "Failed", "template bad"),
				cond(k0rdentv1beta1.DeletingCondition, tr, "Deleting", "going"),
			},
			status: fa, reason: k0rdentv1beta1.DeletingReason, msg: "going",
		},
		{
			name:   "unknown is progressing",
			conds:  []metav1.Condition{cond(k0rdentv1beta1.TemplateReadyCondition, un, "Progressing", "")},
			status: un, reason: k0rdentv1beta1.ProgressingReason, msg: "Object is progressing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status := &k0rdentv1beta1.ClusterDeploymentStatus{Conditions: tt.conds}
			setReady(status, 3)
			ready := meta.FindStatusCondition(status.Conditions, k0rdentv1beta1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.status))
			g.Expect(ready.Reason).To(Equal(tt.reason))
			g.Expect(ready.Message).To(Equal(tt.msg))
			g.Expect(ready.ObservedGeneration).To(BeEquivalentTo(3))
		})
	}
}

func TestCountServices(t *testing.T) {
	st := func(name, state string) k0rdentv1beta1.ServiceState {
		return k0rdentv1beta1.ServiceState{Name: name, Namespace: "ns", State: state}
	}
	tests := []struct {
		name         string
		states       []k0rdentv1beta1.ServiceState
		ready, total int
	}{
		{name: "none"},
		{name: "deployed and pending", states: []k0rdentv1beta1.ServiceState{st("a", "Deployed"), st("b", "Pending")}, ready: 1, total: 2},
		{name: "deployed by any ServiceSet", states: []k0rdentv1beta1.ServiceState{st("a", "Failed"), st("a", "Deployed")}, ready: 1, total: 1},
		{name: "deleting is ignored", states: []k0rdentv1beta1.ServiceState{st("a", "Deleting"), st("b", "Deployed")}, ready: 1, total: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ready, total := countServices(tt.states)
			g.Expect(ready).To(Equal(tt.ready))
			g.Expect(total).To(Equal(tt.total))
		})
	}
}
