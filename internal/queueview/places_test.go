package queueview

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

// waiter is a workspace waiting for GPUs (reason) or for quota (reason "quota").
func waiter(ns, name, cluster string, minute int, priority int32, reason string) *workspacesv1.WorkspaceDeployment {
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name),
		CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))}}
	w.Spec.ClusterDeploymentRef = workspacesv1.ClusterDeploymentReference{Name: cluster, Namespace: "fleet"}
	w.Status.Phase = workspacesv1.PhaseWaiting
	w.Status.ResolvedResources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](1)}}
	if priority != 0 {
		w.Status.Priority = &workspacesv1.WorkspacePriority{Value: priority}
	}
	cond := metav1.Condition{Type: workspacesv1.GPUCapacityCondition, Status: metav1.ConditionFalse, Reason: reason}
	if reason == "quota" {
		cond = metav1.Condition{Type: workspacesv1.QuotaReservedCondition, Status: metav1.ConditionFalse, Reason: workspacesv1.QuotaExceededReason}
	}
	w.Status.Conditions = []metav1.Condition{cond, {Type: "Ready", Status: metav1.ConditionFalse, Reason: cond.Reason}}
	return w
}

func TestPlacesOrderByPriorityThenTimeAndHideOtherNamespaces(t *testing.T) {
	g := NewWithT(t)
	queued := workspacesv1.WaitingBehindOlderReason
	running := waiter("a", "running", "c1", 0, 0, queued)
	running.Status.Phase = workspacesv1.PhaseRunning
	stopped := waiter("a", "stopped", "c1", 0, 0, queued)
	stopped.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	all := []*workspacesv1.WorkspaceDeployment{
		waiter("a", "late-urgent", "c1", 9, 100, queued),
		waiter("b", "secret-project", "c1", 1, 0, workspacesv1.WaitingForGPUCapacityReason),
		waiter("a", "old", "c1", 2, 0, queued),
		waiter("a", "young", "c1", 5, 0, queued),
		waiter("a", "elsewhere", "c2", 3, 0, workspacesv1.WaitingForGPUCapacityReason),
		waiter("a", "for-quota", "c1", 4, 0, "quota"),
		waiter("b", "for-quota-too", "c1", 1, 0, "quota"),
		running, stopped,
	}
	quotas := []TenantQuota{{Name: "shared", Selects: func(string) bool { return true }}, {Name: "b-only", Selects: func(ns string) bool { return ns == "b" }}}
	places := Places("a", all, quotas)
	var names []string
	for _, p := range places {
		names = append(names, p.Name)
	}
	g.Expect(names).To(Equal([]string{"late-urgent", "old", "elsewhere", "for-quota", "young"}), "queue order; only a's waiting workspaces")
	byName := map[string]Place{}
	for _, p := range places {
		byName[p.Name] = p
	}
	g.Expect(byName["late-urgent"].Queues).To(Equal([]Queue{{Kind: ClusterQueue, Name: "fleet/c1", Position: 1, Length: 4}}))
	g.Expect(byName["old"].Queues).To(Equal([]Queue{{Kind: ClusterQueue, Name: "fleet/c1", Position: 3, Length: 4,
		AheadInNamespace: []string{"late-urgent"}, AheadElsewhere: 1}}))
	g.Expect(byName["young"].Queues).To(Equal([]Queue{{Kind: ClusterQueue, Name: "fleet/c1", Position: 4, Length: 4,
		AheadInNamespace: []string{"late-urgent", "old"}, AheadElsewhere: 1}}))
	g.Expect(byName["elsewhere"].Queues).To(Equal([]Queue{{Kind: ClusterQueue, Name: "fleet/c2", Position: 1, Length: 1}}))
	g.Expect(byName["for-quota"].Queues).To(Equal([]Queue{{Kind: QuotaQueue, Name: "shared", Position: 2, Length: 2, AheadElsewhere: 1}}),
		"only the quotas that select it")
	g.Expect(byName["old"].Priority).To(BeZero())
	g.Expect(byName["late-urgent"].Priority).To(BeEquivalentTo(100))
	g.Expect(byName["old"].QueuedAt).To(Equal(t0.Add(2 * time.Minute)))
	for _, p := range places {
		g.Expect(fmt.Sprint(p)).NotTo(ContainSubstring("secret-project"), "no name of another namespace")
		g.Expect(fmt.Sprint(p)).NotTo(ContainSubstring("for-quota-too"))
	}
	g.Expect(Places("c", all, quotas)).To(BeEmpty())
}

func TestPlacesNameAtMostMaxNamed(t *testing.T) {
	g := NewWithT(t)
	var all []*workspacesv1.WorkspaceDeployment
	for i := range 3 * MaxNamed {
		all = append(all, waiter("a", fmt.Sprintf("w%02d", i), "c1", i, 0, workspacesv1.WaitingBehindOlderReason))
	}
	places := Places("a", all, nil)
	last := places[len(places)-1].Queues[0]
	g.Expect(last.Position).To(Equal(3 * MaxNamed))
	g.Expect(last.AheadInNamespace).To(HaveLen(MaxNamed))
	g.Expect(strings.Join(last.AheadInNamespace, ",")).To(HavePrefix("w00,w01"))
}
