package wakeups_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestEveryWaitEndsWhenThingsSettleAtOnce: the stand-in reports every
// ServiceSet Deployed at once, and each status write of a workspace reaches
// the API server 300 ms late, so the shared prerequisite, the ServiceSets
// and the quota settle while the manager's cache still holds each
// workspace's previous phase. Eight workspaces of two classes sharing one
// prerequisite on two clusters, created together: the four without GPUs
// and three of the four with one GPU run; the fourth waits for room in
// the tenant's 3-GPU quota, and runs once a GPU workspace is deleted.
func TestEveryWaitEndsWhenThingsSettleAtOnce(t *testing.T) {
	apiary(t, 300*time.Millisecond)
	ns := env.NewNamespace(t, "instant")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	builder.CreateReady(t, env.Client, standin.NewClusterDeployment(ns, "c2", "tpl", "cred"))
	templates(t, ns, map[string]string{standin.AnnotationInstant: "true"})
	gpuNode(t, ns+"-n1", ns, 4)
	gpuQuota(t, ns, 3)
	notebook := class(t, ns, ns+"-notebook", 0)
	trainer := class(t, ns, ns+"-trainer", 1)

	var notebooks, trainers []*workspacesv1.WorkspaceDeployment
	for i, cluster := range []string{"c1", "c2", "c1", "c2"} {
		notebooks = append(notebooks, newWorkspace(ns, fmt.Sprintf("i-nb-%d", i), notebook, cluster))
		trainers = append(trainers, onModel(newWorkspace(ns, fmt.Sprintf("i-tr-%d", i), trainer, cluster), ns))
	}
	ws := append(append([]*workspacesv1.WorkspaceDeployment{}, notebooks...), trainers...)
	createAll(t, ws...)

	expectPhases(t, notebooks, all(workspacesv1.PhaseRunning))
	var waiter, freed *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		got := phases(g, trainers)
		running, waiting := 0, 0
		for _, w := range trainers {
			switch phaseOf(got[w.Name]) {
			case workspacesv1.PhaseRunning:
				running++
				freed = w
			case workspacesv1.PhaseWaiting:
				waiting++
				waiter = w
			}
		}
		g.Expect([]int{running, waiting}).To(Equal([]int{3, 1}), "trainers: %v", got)
	}, settle, 200*time.Millisecond).Should(Succeed())

	world.DeleteAndWait(t, env.Client, freed)
	expectPhases(t, []*workspacesv1.WorkspaceDeployment{waiter}, all(workspacesv1.PhaseRunning))
}

// TestEveryWaitEndsWhenThingsSettleSlowly: the workspaces are created
// together with what they wait for, which comes slowly: their classes
// (validated by the manager), cluster c2 (provisioned in 3 s), a values
// Secret (created 2 s later), the shared prerequisite and their releases
// (installed with Helm after 1.5 s each), and GPUs (a 2-GPU node for three
// 1-GPU workspaces of c1, the third admitted when one of the others is
// deleted).
func TestEveryWaitEndsWhenThingsSettleSlowly(t *testing.T) {
	ctx := context.Background()
	apiary(t, 0)
	ns := env.NewNamespace(t, "slow")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	templates(t, ns, map[string]string{standin.AnnotationDelay: "1500ms"})
	gpuNode(t, ns+"-n1", ns, 2)
	late := standin.NewClusterDeployment(ns, "c2", "tpl", "cred")
	late.Annotations = map[string]string{standin.AnnotationDelay: "3s"}
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	notebook := class(t, ns, ns+"-notebook", 0)
	trainer := class(t, ns, ns+"-trainer", 1)

	withValues := newWorkspace(ns, "s-nb-values", notebook, "c1")
	withValues.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "late-values"}}
	notebooks := []*workspacesv1.WorkspaceDeployment{
		newWorkspace(ns, "s-nb-0", notebook, "c1"),
		newWorkspace(ns, "s-nb-1", notebook, "c2"),
		newWorkspace(ns, "s-nb-2", notebook, "c2"),
		withValues,
	}
	trainers := []*workspacesv1.WorkspaceDeployment{
		onModel(newWorkspace(ns, "s-tr-0", trainer, "c1"), ns),
		onModel(newWorkspace(ns, "s-tr-1", trainer, "c1"), ns),
		onModel(newWorkspace(ns, "s-tr-2", trainer, "c1"), ns),
	}
	createAll(t, append(append([]*workspacesv1.WorkspaceDeployment{}, notebooks...), trainers...)...)
	time.Sleep(2 * time.Second)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-values"},
		StringData: map[string]string{"values.yaml": "greeting: late\n"}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	expectPhases(t, notebooks, all(workspacesv1.PhaseRunning))
	var waiter *workspacesv1.WorkspaceDeployment
	var runningTrainers []*workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		got := phases(g, trainers)
		runningTrainers, waiter = nil, nil
		for _, w := range trainers {
			switch phaseOf(got[w.Name]) {
			case workspacesv1.PhaseRunning:
				runningTrainers = append(runningTrainers, w)
			case workspacesv1.PhaseWaiting:
				waiter = w
			}
		}
		g.Expect(runningTrainers).To(HaveLen(2), "trainers: %v", got)
		g.Expect(waiter).NotTo(BeNil(), "trainers: %v", got)
	}, settle, 200*time.Millisecond).Should(Succeed())

	world.DeleteAndWait(t, env.Client, runningTrainers[0])
	expectPhases(t, []*workspacesv1.WorkspaceDeployment{waiter}, all(workspacesv1.PhaseRunning))
	_ = client.IgnoreNotFound(env.Client.Delete(ctx, secret))
}
