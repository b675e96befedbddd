package shard

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/scheme"
)

const leaseNS = "apiary-system"

// cdOfShard finds a standalone ClusterDeployment whose unit belongs to
// shard want of shards.
func cdOfShard(want, shards int) Unit {
	for i := 0; ; i++ {
		u := Unit{Kind: KindClusterDeployment, NamespacedName: types.NamespacedName{Namespace: "team", Name: "cd-" + string(rune('a'+i%26)) + string(rune('a'+i/26))}}
		if Desired(u.Key(), shards) == want {
			return u
		}
	}
}

func newGate(index int, objs ...client.Object) (*Gate, client.Client) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	return &Gate{Config: Config{Index: index, Shards: 2}, Client: c, Reader: c, LeaseNamespace: leaseNS}, c
}

func cd(u Unit, holder string) *k0rdentv1beta1.ClusterDeployment {
	obj := &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: u.Namespace, Name: u.Name}}
	if holder != "" {
		obj.Annotations = map[string]string{HolderAnnotation: holder}
	}
	return obj
}

func holderOf(g Gomega, c client.Client, u Unit) string {
	obj := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(c.Get(context.Background(), u.NamespacedName, obj)).To(Succeed())
	return obj.Annotations[HolderAnnotation]
}

func lease(i int, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: LeaseName(i)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renewed}}}
}

func TestGateClaimsAndActs(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(0, 2)
	gate, c := newGate(0, cd(u, ""))
	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Claim))
	g.Expect(tk.Acting()).To(BeTrue())
	g.Expect(tk.Holder).NotTo(BeNil())
	tk.Done()
	g.Expect(holderOf(g, c, u)).To(Equal("0"))
	tk, err = gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Act), "claimed once")
	tk.Done()
}

func TestGateOtherShardsUnitIsSkipped(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(1, 2)
	gate, c := newGate(0, cd(u, ""))
	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Acting()).To(BeFalse())
	g.Expect(tk.Action).To(Equal(Skip))
	g.Expect(holderOf(g, c, u)).To(BeEmpty(), "nothing written")
	g.Expect(gate.Relevant(context.Background(), u)).To(BeFalse())
}

// TestGateDrainsBeforeRelease: a unit this shard holds but no longer
// wants is released only once no reconcile of it is in flight, and is
// never acted on again by this process, even while its cache lags.
func TestGateDrainsBeforeRelease(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(1, 2) // shard 1's unit, held by shard 0 (a configuration before)
	gate, c := newGate(0, cd(u, "0"))
	var released []Unit
	gate.OnRelease = func(_ context.Context, u Unit) { released = append(released, u) }
	// Pretend a reconcile entered while the unit was still wanted.
	ok, done := gate.enter(u, true)
	g.Expect(ok).To(BeTrue())

	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Release))
	g.Expect(tk.Acting()).To(BeFalse())
	g.Expect(tk.RequeueAfter).To(Equal(Retry))
	g.Expect(holderOf(g, c, u)).To(Equal("0"), "not released while a reconcile runs")
	again, _ := gate.enter(u, true)
	g.Expect(again).To(BeFalse(), "no reconcile enters a draining unit")

	done()
	tk, err = gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Release))
	g.Expect(holderOf(g, c, u)).To(BeEmpty(), "released once drained")
	g.Expect(released).To(ConsistOf(u))

	tk, err = gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Skip))
	g.Expect(tk.Acting()).To(BeFalse())
}

// TestGateRemembersItsClaimWhileTheCacheLags: right after a claim, a
// reader that still shows the unit unclaimed does not make the gate claim
// again.
func TestGateRemembersItsClaimWhileTheCacheLags(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(0, 2)
	stale := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(cd(u, "")).Build()
	gate, c := newGate(0, cd(u, ""))
	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Claim))
	tk.Done()
	// The cache still has the version before the claim (an older
	// resourceVersion): the gate uses what it wrote.
	old := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(stale.Get(context.Background(), u.NamespacedName, old)).To(Succeed())
	g.Expect(old.ResourceVersion).NotTo(Equal(tk.Holder.GetResourceVersion()))
	gate.Reader = stale
	tk, err = gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Act))
	tk.Done()
	g.Expect(holderOf(g, c, u)).To(Equal("0"))
}

func TestGateWaitsForALiveHolderAndTakesOverALapsedOne(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(0, 2)
	now := time.Now()
	gate, c := newGate(0, cd(u, "1"), lease(1, now))
	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Wait))
	g.Expect(tk.Reason).To(Equal(ReasonHandOver))
	g.Expect(tk.RequeueAfter).To(BeNumerically("<=", 16*time.Second), "looks again when the Lease would lapse")
	g.Expect(holderOf(g, c, u)).To(Equal("1"))

	gate.now = func() time.Time { return now.Add(16 * time.Second) }
	tk, err = gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(TakeOver))
	g.Expect(tk.Acting()).To(BeTrue())
	tk.Done()
	g.Expect(holderOf(g, c, u)).To(Equal("0"))
}

func TestGateClaimLosesARace(t *testing.T) {
	g := NewWithT(t)
	u := cdOfShard(0, 2)
	stale := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(cd(u, "")).Build()
	gate, c := newGate(0, cd(u, ""))
	// Another writer changed the object after the gate's cache read it.
	obj := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(c.Get(context.Background(), u.NamespacedName, obj)).To(Succeed())
	obj.Labels = map[string]string{"touched": "yes"}
	g.Expect(c.Update(context.Background(), obj)).To(Succeed())
	gate.Reader = stale
	tk, err := gate.Enter(context.Background(), u)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Claim))
	g.Expect(tk.Acting()).To(BeFalse(), "the claim's precondition failed")
	g.Expect(tk.RequeueAfter).To(Equal(Retry))
	g.Expect(holderOf(g, c, u)).To(BeEmpty())
}

func TestGateOffActsOnEverything(t *testing.T) {
	g := NewWithT(t)
	var gate *Gate
	tk, err := gate.Enter(context.Background(), Unit{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Acting()).To(BeTrue())
	tk.Done()
	g.Expect(gate.Relevant(context.Background(), Unit{})).To(BeTrue())
}

func TestLeaseLeft(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	g.Expect(LeaseLeft(lease(0, now), now)).To(Equal(15 * time.Second))
	g.Expect(LeaseLeft(lease(0, now.Add(-20*time.Second)), now)).To(BeZero())
	released := lease(0, now)
	released.Spec.HolderIdentity = ptr.To("")
	g.Expect(LeaseLeft(released, now)).To(BeZero())
	g.Expect(LeaseLeft(&coordinationv1.Lease{}, now)).To(BeZero())
}
