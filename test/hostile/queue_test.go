package hostile_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/queueview"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// Test17QueuePositionsAreReadWithTheTenantsOwnRights: the manager (its own
// process) serves queue positions. An owner's waiting workspace stands
// behind the owner's holder's successor and an intruder's workspace on the
// owner's cluster; apiary queue, with the owner's ServiceAccount token,
// shows its place, names the owner's workspace ahead and only counts the
// intruder's. The intruder's token reading the owner's namespace is refused,
// as is no token; its own namespace shows only its own workspace.
func Test17QueuePositionsAreReadWithTheTenantsOwnRights(t *testing.T) {
	g := NewWithT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	switchManager(t, "queue", "--no-cross-namespace-refs=false", "--queue-bind-address="+addr)
	owner, intruder := tenant(t, "queue-own"), tenant(t, "queue-int")
	model := gpuNode(t, owner)
	withGPU := func(ns, name, cls string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.ClusterDeploymentRef.Namespace = owner
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: ptr.To[int32](1), GPUType: ptr.To(model)}}
		return w
	}
	sfx := owner[len(owner)-5:]
	ownerClass := class(t, owner, nil)
	holder := withGPU(owner, "holder-"+sfx, ownerClass)
	create(t, holder)
	world.EventuallyPhase(t, env.Client, holder, workspacesv1.PhaseRunning)
	first := withGPU(owner, "first-"+sfx, ownerClass)
	create(t, first)
	world.EventuallyPhase(t, env.Client, first, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond) // later creation timestamps
	secret := withGPU(intruder, "secret-project-"+sfx, class(t, intruder, nil))
	create(t, secret)
	world.EventuallyPhase(t, env.Client, secret, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond)
	last := withGPU(owner, "last-"+sfx, ownerClass)
	create(t, last)
	world.EventuallyPhase(t, env.Client, last, workspacesv1.PhaseWaiting)

	ownerToken := builder.TenantToken(t, env.Config, owner, "reader", true)
	intruderToken := builder.TenantToken(t, env.Config, intruder, "reader", true)
	queue := func(token, ns string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := queueview.Main(append([]string{"--kubeconfig", builder.Kubeconfig(t, env.Config, token, ns),
			"--server", "https://" + addr, "--insecure-skip-tls-verify"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	g.Eventually(func(g Gomega) {
		code, out, errOut := queue(ownerToken, owner)
		g.Expect(code).To(Equal(0), errOut)
		g.Expect(out).To(MatchRegexp(last.Name + `\s+WaitingBehindOlderWorkspaces\s+0\s+\S+\s+Cluster ` + owner + `/c1\s+3/3\s+` +
			first.Name + ` and 1 of other namespaces`))
		g.Expect(out).To(MatchRegexp(first.Name + `\s+\S+\s+0\s+\S+\s+Cluster ` + owner + `/c1\s+1/3\s+-`))
		g.Expect(out).NotTo(ContainSubstring("secret-project"), "another tenant's names are never told")
	}, timeout, time.Second).Should(Succeed())

	code, _, errOut := queue(intruderToken, owner)
	g.Expect(code).To(Equal(1))
	g.Expect(errOut).To(ContainSubstring("403"), "the intruder may not list the owner's workspaces")
	code, out, errOut := queue(intruderToken, intruder)
	g.Expect(code).To(Equal(0), errOut)
	g.Expect(out).To(MatchRegexp(secret.Name + `\s+\S+\s+0\s+\S+\s+Cluster ` + owner + `/c1\s+2/3\s+1 of other namespaces`))
	g.Expect(out).NotTo(ContainSubstring(first.Name))
	g.Expect(out).NotTo(ContainSubstring(last.Name))
}
