package hostile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world"
)

// Test2ArithmeticNeverUnderCounts: 3 replicas of 4,000,000,000,000,000 CPUs
// and 4Pi of memory are refused by the API; within the bounds, a tenant
// with a 16-CPU quota runs 16 CPUs' worth and waits for the rest, and the
// quota's usage is never negative nor less than what runs.
func Test2ArithmeticNeverUnderCounts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "arith")
	labelNamespace(t, ns, map[string]string{"tenant": ns})
	create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "arith-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse("16"))},
	}})
	cls := class(t, ns, nil)

	huge := workspace(ns, "huge", cls, "c1")
	huge.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](3), PerReplica: &workspacesv1.PerReplicaResources{
		CPU: ptr.To(resource.MustParse("4000000000000000")), Memory: ptr.To(resource.MustParse("4Pi"))}}
	err := env.Client.Create(ctx, huge)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the API refuses absurd amounts: %v", err)

	withCPU := func(name string, replicas int32, cpu string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To(replicas),
			PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse(cpu))}}
		return w
	}
	fits := withCPU("fits", 2, "8")
	create(t, fits)
	world.EventuallyPhase(t, env.Client, fits, workspacesv1.PhaseRunning)
	// The largest request the bounds allow: 1,000 replicas of 4,096 CPUs.
	most := withCPU("most", 1000, "4096")
	create(t, most)
	g.Eventually(func(g Gomega) {
		w := get(g, most)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "message: %s", w.Status.Message)
		c := condition(w, workspacesv1.QuotaReservedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.QuotaExceededReason))
		q := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "arith-" + ns}, q)).To(Succeed())
		g.Expect(q.Status.Used.CPU).NotTo(BeNil())
		g.Expect(q.Status.Used.CPU.Cmp(resource.MustParse("16"))).To(Equal(0), "what runs is charged, nothing more: %s", q.Status.Used.CPU)
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// Test3KubeconfigOpensNoFile: a tenant writes its cluster's kubeconfig
// with a token file that is a FIFO, a client certificate at a local path,
// an exec plugin, and a plain-http server. None is followed: the
// workspaces on those clusters wait with a message that names neither the
// path nor the file's existence, no process ever opens the FIFO, and a
// workspace on a good cluster runs meanwhile.
func Test3KubeconfigOpensNoFile(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "kubeconfig")
	fifo := makeFIFO(t)
	variants := map[string]func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo){
		"fifo":   func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.TokenFile = fifo },
		"passwd": func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.ClientCertificate = "/etc/passwd" },
		"exec": func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh"}
		},
		"http": func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = strings.Replace(c.Server, "https://", "http://", 1)
		},
	}
	cls := class(t, ns, nil)
	var waiting []*workspacesv1.WorkspaceDeployment
	for name, mutate := range variants {
		running.Route(ns+"/"+name, tenantKubeconfig(t, mutate))
		cd := readyClusterWithKubeconfig(t, ns, name, ns+"/"+name)
		w := workspace(ns, "kc-"+name, cls, cd)
		create(t, w)
		waiting = append(waiting, w)
	}
	good := workspace(ns, "kc-good", cls, "c1")
	create(t, good)

	stop := watchFIFO(t, fifo)
	world.EventuallyPhase(t, env.Client, good, workspacesv1.PhaseRunning)
	for _, w := range waiting {
		g.Eventually(func(g Gomega) {
			got := get(g, w)
			g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhasePending), "%s: %s", w.Name, got.Status.Message)
			g.Expect(got.Status.Message).To(ContainSubstring("child cluster"))
			g.Expect(got.Status.Message).NotTo(ContainSubstring(fifo))
			g.Expect(got.Status.Message).NotTo(ContainSubstring("/etc/passwd"))
			g.Expect(got.Status.Message).NotTo(ContainSubstring("no such file"))
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
	g.Expect(stop()).To(BeFalse(), "the manager opened the tenant's FIFO")
	// A workspace waits for its namespace on the child to be deleted, and
	// these children cannot be reached: their clusters go first.
	for name := range variants {
		_ = env.Client.Delete(context.Background(), &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
}

// Test7UnmarkedNamespaceIsNotAdopted: the child already has a namespace
// ws-<name> without a workspace's mark; the workspace of that name fails
// with NamespaceConflict, the namespace keeps its labels, and deleting the
// workspace leaves it.
func Test7UnmarkedNamespaceIsNotAdopted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "nsmark")
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-hostile-theirs", Labels: map[string]string{"team": "other"}}}
	g.Expect(child.Client.Create(ctx, theirs)).To(Succeed())
	t.Cleanup(func() { _ = child.Client.Delete(context.Background(), theirs) })

	w := workspace(ns, "hostile-theirs", class(t, ns, nil), "c1")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), "message: %s", got.Status.Message)
		g.Expect(got.Status.FailureContext).NotTo(BeNil())
		g.Expect(got.Status.FailureContext.Reason).To(Equal(workspacesv1.NamespaceConflictReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	world.DeleteAndWait(t, env.Client, w)
	after := &corev1.Namespace{}
	g.Expect(child.Client.Get(ctx, client.ObjectKeyFromObject(theirs), after)).To(Succeed())
	g.Expect(after.DeletionTimestamp.IsZero()).To(BeTrue(), "not deleted with the workspace")
	g.Expect(after.Labels).To(Equal(map[string]string{"team": "other", "kubernetes.io/metadata.name": theirs.Name}), "not relabelled")
}
