package crash_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/crashpoint"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
	"github.com/apiaryhq/apiary/test/standin"
)

// stopPoints are the crash points of a stop, one stopping workspace killed
// at each. workspace-stop-scaled comes first: a stopped workspace passes it
// again on every reconcile, so it must be armed while none is stopped.
var stopPoints = []string{crashpoint.WorkspaceStopScaled, crashpoint.WorkspaceStopRequested, crashpoint.WorkspaceStopReleased}

// stopGPUs is what each workspace of the stop tests asks for: two fit on a
// node, so four run and the fifth waits.
const stopGPUs = 2

// runBeforeStops is how long the workspaces of the direct stop test run
// before the first stop: each stopped run is then worth more GPU-seconds
// (2 × 30) than expectTenantUsage's tolerance (2 × (2 × 8 + 10) = 52).
const runBeforeStops = 30 * time.Second

// gpuResource is the fleet's GPU resource.
const gpuResource = "nvidia.com/gpu"

// TestDirectModeStopsAndStartsSurviveKills stops workspaces and starts them
// again while the manager is SIGKILLed at each crash point of a stop and a
// start (see stopAndStart).
func TestDirectModeStopsAndStartsSurviveKills(t *testing.T) {
	f := newFleet(t, "sd", 1, 1)
	stopAndStart(t, f, newManager(t), nil)
}

// TestGitModeStopsAndStartsSurviveKills is the same in Git mode: the paused
// and the unpaused ServiceSet reach the cluster through a commit that Flux
// applies.
func TestGitModeStopsAndStartsSurviveKills(t *testing.T) {
	rig := startGitRig(t)
	f := newFleet(t, "sg", 1, 1)
	stopAndStart(t, f, newManager(t, rig.managerFlags(filepath.Join(workDir, "checkout-stop"))...), rig)
}

// hubState is what a workspace's release is on the child: the hub chart's
// Deployment, volume claim and namespace.
type hubState struct {
	replicas     int32
	saved        string // the stopped-replicas annotation, "" without
	pvc, nsUID   types.UID
	pausedSet    bool
	pausedInGit  bool
	gitFileFound bool
}

// stopAndStart runs five GPU workspaces of the hub chart under a quota,
// four running and one waiting; stops three, the manager killed once at
// each crash point of a stop, each in turn; checks that they are stopped
// with nothing lost and that the waiting one got their GPUs; deletes that
// one and starts the three again, the manager killed at the crash point of
// a start; and checks that they run as before. The invariants (no
// over-admission, no admission lost but by a stop) are watched all along.
func stopAndStart(t *testing.T, f *fleet, m *manager, rig *gitRig) {
	g := NewWithT(t)
	began := time.Now()
	inv := watchInvariants(t, f.ns, f.capacity)
	class := f.hubClass()
	quota := f.quota()
	m.Start()
	f.createColony()
	for i := range 5 {
		f.workspaces = append(f.workspaces, &workspace{name: fmt.Sprintf("%s-%d", f.prefix, i), cluster: f.clusters[0], class: class, gpus: stopGPUs})
	}
	stopped, waiter := f.workspaces[:3], f.workspaces[4]
	for _, w := range f.workspaces[:4] {
		g.Expect(f.create(w)).To(Succeed())
	}
	settle(t, 3*time.Minute, func(g Gomega) {
		for _, w := range f.workspaces[:4] {
			g.Expect(f.phase(g, w)).To(Equal(workspacesv1.PhaseRunning), "workspace %s", w.name)
		}
	})
	g.Expect(f.create(waiter)).To(Succeed())
	settle(t, time.Minute, func(g Gomega) {
		g.Expect(f.phase(g, waiter)).To(Equal(workspacesv1.PhaseWaiting))
	})
	before := map[string]hubState{}
	settle(t, time.Minute, func(g Gomega) {
		for _, w := range stopped {
			s := f.hub(g, w, rig)
			g.Expect(s.replicas).To(BeEquivalentTo(1), "workspace %s runs its Deployment", w.name)
			before[w.name] = s
		}
	})
	if rig == nil {
		// Long enough that counting a stopped workspace's run twice on its
		// tenant is beyond expectTenantUsage's tolerance.
		time.Sleep(runBeforeStops)
	}
	ran := time.Since(began)

	// Each stop is killed at its point, then finished by a plain run. The
	// usage its admission counted is its run, once: between the time the
	// stop was asked and the time it was seen done.
	for i, point := range stopPoints {
		w := stopped[i]
		admittedAt := f.get(g, w).Status.Admission.AdmittedAt.Time
		m.Kill()
		m.Start(crashpoint.EnvPause + "=" + point)
		asked := time.Now()
		g.Expect(retryUpdate(func() error { return f.setStopped(w, true) })).To(Succeed())
		g.Expect(m.WaitMarker(point, markerTimeout)).To(Succeed(), "stopping %s", w.name)
		m.Kill()
		m.Start()
		settle(t, 2*time.Minute, func(g Gomega) { f.isStopped(g, w, before[w.name], rig) })
		expectCountedOnce(g, f.get(g, w), admittedAt, asked, time.Now(), point)
	}
	if rig == nil {
		expectTenantUsage(t, g, f, quota)
	}
	stopping := time.Since(began) - ran
	settle(t, 2*time.Minute, func(g Gomega) {
		for _, w := range stopped {
			f.isStopped(g, w, before[w.name], rig)
			g.Expect(inv.Specs("ServiceSet", serviceSetName(w))).To(HaveLen(1),
				"the spec of the ServiceSet of %s changed: a stop only pauses it", w.name)
		}
		g.Expect(f.phase(g, waiter)).To(Equal(workspacesv1.PhaseRunning), "the waiting workspace got the GPUs given back")
		charged := f.charged(g, quota)
		for _, w := range stopped {
			g.Expect(charged).NotTo(ContainElement(w.name), "stopped workspace %s is charged", w.name)
		}
		g.Expect(charged).To(ContainElements(f.workspaces[3].name, waiter.name))
	})

	// The waiting one goes, to make room; the three start again, the
	// manager killed where one has scaled back and not yet delivered.
	g.Expect(f.remove(waiter)).To(Succeed())
	m.Kill()
	m.Start(crashpoint.EnvPause + "=" + crashpoint.WorkspaceStartScaled)
	for _, w := range stopped {
		g.Expect(retryUpdate(func() error { return f.setStopped(w, false) })).To(Succeed())
	}
	g.Expect(m.WaitMarker(crashpoint.WorkspaceStartScaled, markerTimeout)).To(Succeed(), "starting")
	m.Kill()
	m.Start()
	checked := 0
	settle(t, 3*time.Minute, func(g Gomega) {
		for _, w := range stopped {
			f.isRunningAgain(g, w, before[w.name], rig)
			g.Expect(inv.Specs("ServiceSet", serviceSetName(w))).To(HaveLen(1),
				"the spec of the ServiceSet of %s changed: a start only lifts the pause", w.name)
		}
		checked = f.converged(g, inv, []string{f.colony[0]})
		if rig != nil {
			checked += f.committed(g, rig, []string{f.colony[0]})
		}
		g.Expect(f.charged(g, quota)).To(ConsistOf(f.workspaces[0].name, f.workspaces[1].name, f.workspaces[2].name, f.workspaces[3].name))
	})
	g.Expect(inv.Violations()).To(BeEmpty(), "invariants broken while the manager was killed")
	starts, kills, selfExits := m.Counts()
	g.Expect(selfExits).To(BeEmpty(), "the manager exited by itself")
	mode, history := "direct", ""
	if rig != nil {
		h, err := rig.checkHistory()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.problems).To(BeEmpty(), "the repository's history")
		mode, history = "git", fmt.Sprintf("%d commits, %d pushes (force pushes: 0), git fsck clean, empty commits: 0, "+
			"content written twice: 0 (%d lifted pauses); ", h.commits, h.pushes, h.pauses)
	}
	events, objects, peak := inv.Figures()
	t.Logf("%s mode stop/start: %d kills (%d starts; 1 at each of %s, %s), %d workspaces of %d GPUs on %d nodes of %d, 3 stopped and started again; "+
		"%s%d objects checked at the end, %d objects and %d events watched, violations: %d (%s); rollout %s, stops %s, total %s",
		mode, kills, starts, strings.Join(stopPoints, ", "), crashpoint.WorkspaceStartScaled, len(f.workspaces), stopGPUs, gpuNodes, gpusPerNode,
		history, checked, objects, events, len(inv.Violations()), peak, ran.Round(time.Second), stopping.Round(time.Second), time.Since(began).Round(time.Second))
	f.cleanUp()
}

// expectCountedOnce: a stopped workspace's usage is its one admission's
// GPUs over [admittedAt, the stop), the stop somewhere between asked and
// done (to the second): a kill at any point of the stop neither loses the
// run nor counts it twice.
func expectCountedOnce(g Gomega, w *workspacesv1.WorkspaceDeployment, admittedAt, asked, done time.Time, point string) {
	g.Expect(w.Status.Usage).NotTo(BeNil(), "%s (killed at %s) counted its run", w.Name, point)
	got := usage.GPUSecondsOf(*w.Status.Usage, gpuResource)
	low := stopGPUs * (asked.Truncate(time.Second).Unix() - admittedAt.Unix())
	high := stopGPUs * (done.Unix() + 1 - admittedAt.Unix())
	g.Expect(got).To(SatisfyAll(BeNumerically(">=", low), BeNumerically("<=", high)),
		"%s (killed at %s): %d GPU-seconds, its run is %d to %d", w.Name, point, got, low, high)
}

// expectTenantUsage: what the quota counted plus what it holds is what
// the workspaces counted plus what they hold, within two seconds per
// admission and stop (a workspace stamps its admission a moment before its
// quota counts it) and ten more (a stop killed between the two writes ends
// them a restart apart): never a run twice.
func expectTenantUsage(t *testing.T, g Gomega, f *fleet, q *quotav1alpha1.TenantQuota) {
	ctx := context.Background()
	got := &quotav1alpha1.TenantQuota{}
	g.Expect(f.c.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
	list := &workspacesv1.WorkspaceDeploymentList{}
	g.Expect(f.c.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	now := time.Now()
	var sum, admissions int64
	for _, w := range list.Items {
		sum += usage.GPUSecondsOf(usage.OfWorkspace(w.Status, now), gpuResource)
		admissions++ // the first admission of each
		if w.Status.Lifecycle != nil && w.Status.Lifecycle.StopReason != "" {
			admissions++ // its stop
		}
	}
	tenant := usage.GPUSecondsOf(usage.Now(got.Status.Usage, quota.HeldUsage(got, quota.MembersByQuota(list.Items)[got.Name]), now), gpuResource)
	tolerance := stopGPUs * (2*admissions + 10)
	t.Logf("usage: the tenant counted %d GPU-seconds, its workspaces %d (tolerance %d)", tenant, sum, tolerance)
	g.Expect(tenant).To(BeNumerically("~", sum, tolerance))
}

// hubClass creates a class whose template installs the hub-shaped chart (a
// Deployment of one replica and a volume claim) and returns its name.
func (f *fleet) hubClass() string {
	f.t.Helper()
	ctx := context.Background()
	if err := standin.CreateWithStatus(ctx, f.c, standin.NewServiceTemplate(f.ns, "hub", true,
		map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub})); err != nil {
		f.t.Fatal(err)
	}
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: f.prefix + "-hub"}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "hub", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "hub", Namespace: f.ns}}}
	if err := f.c.Create(ctx, c); err != nil {
		f.t.Fatalf("creating WorkspaceClass %s: %v", c.Name, err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	return c.Name
}

// quota creates a TenantQuota of the fleet's namespace, generous enough
// that it holds nobody up: it only records charges.
func (f *fleet) quota() *quotav1alpha1.TenantQuota {
	f.t.Helper()
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: f.prefix}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: f.ns}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10)},
	}}
	if err := f.c.Create(context.Background(), q); err != nil {
		f.t.Fatalf("creating TenantQuota: %v", err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
	return q
}

// charged are the names of the workspaces the quota charges resources
// (quota.Counted: its change in flight, else the workspace's record): a
// stopped workspace's charge, which holds only its place in the workspaces
// count (quota.Held), is not one. The quota's totals are the sum of what
// it counts of the fleet's workspaces, nothing lost or counted twice.
func (f *fleet) charged(g Gomega, q *quotav1alpha1.TenantQuota) []string {
	ctx := context.Background()
	got := &quotav1alpha1.TenantQuota{}
	g.Expect(f.c.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
	list := &workspacesv1.WorkspaceDeploymentList{}
	g.Expect(f.c.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	var out []string
	var workspaces int64
	for i := range list.Items {
		w := &list.Items[i]
		c := quota.Counted(got, quota.RefOf(w), w.Status.QuotaCharges)
		if c == nil {
			continue
		}
		workspaces++
		if !quota.IsHeld(*c) {
			out = append(out, w.Name)
		}
	}
	g.Expect(got.Status.Used.Workspaces).To(Equal(workspaces), "the quota's total is what it counts of each workspace")
	return out
}

// setStopped asks for a workspace to stop, or to start again.
func (f *fleet) setStopped(w *workspace, stopped bool) error {
	ctx := context.Background()
	cur := &workspacesv1.WorkspaceDeployment{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, cur); err != nil {
		return err
	}
	if cur.Spec.Lifecycle == nil {
		cur.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
	}
	cur.Spec.Lifecycle.Stopped = stopped
	return f.c.Update(ctx, cur)
}

func (f *fleet) get(g Gomega, w *workspace) *workspacesv1.WorkspaceDeployment {
	obj := &workspacesv1.WorkspaceDeployment{}
	g.Expect(f.c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: w.name}, obj)).To(Succeed())
	return obj
}

func (f *fleet) phase(g Gomega, w *workspace) workspacesv1.WorkspacePhase {
	return f.get(g, w).Status.Phase
}

// hub reads a workspace's release on the child and its ServiceSet, in the
// cluster and, with a rig, at the branch head.
func (f *fleet) hub(g Gomega, w *workspace, rig *gitRig) hubState {
	ctx := context.Background()
	name, namespace := release(w)
	d := &appsv1.Deployment{}
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d)).To(Succeed(), "Deployment of %s", w.name)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc)).To(Succeed(), "volume claim of %s", w.name)
	g.Expect(pvc.DeletionTimestamp).To(BeNil(), "volume claim of %s is being deleted", w.name)
	ns := &corev1.Namespace{}
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns)).To(Succeed())
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: serviceSetName(w)}, ss)).To(Succeed())
	s := hubState{replicas: ptr.Deref(d.Spec.Replicas, -1), saved: d.Annotations[scaledown.ReplicasAnnotation],
		pvc: pvc.UID, nsUID: ns.UID}
	_, s.pausedSet = ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation]
	if rig != nil {
		file, err := rig.show(objectFile(f.ns, "serviceset", serviceSetName(w)))
		s.gitFileFound = err == nil
		s.pausedInGit = strings.Contains(file, k0rdentv1beta1.ServiceSetPausedAnnotation)
	}
	return s
}

// isStopped checks a stopped workspace as a user sees it: phase Stopped
// with stoppedAt, Ready=True Stopped, no admission, its Deployment at zero
// with its count saved, the same volume claim and namespace as before,
// its ServiceSet paused (and so committed in Git mode).
func (f *fleet) isStopped(g Gomega, w *workspace, before hubState, rig *gitRig) {
	obj := f.get(g, w)
	g.Expect(obj.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "workspace %s: %s", w.name, obj.Status.Message)
	g.Expect(obj.Status.Lifecycle).NotTo(BeNil())
	g.Expect(obj.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "workspace %s: stoppedAt", w.name)
	ready := conditionOf(obj, commonv1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "workspace %s: Ready", w.name)
	g.Expect(ready.Reason).To(Equal(workspacesv1.StoppedReason))
	g.Expect(ready.ObservedGeneration).To(Equal(obj.Generation))
	g.Expect(conditionOf(obj, commonv1.ReconcilingCondition)).To(BeNil(), "workspace %s still Reconciling", w.name)
	g.Expect(obj.Status.Admission).To(BeNil(), "workspace %s keeps its admission", w.name)
	s := f.hub(g, w, rig)
	g.Expect(s.replicas).To(BeZero(), "Deployment of %s", w.name)
	g.Expect(s.saved).To(Equal(fmt.Sprint(before.replicas)), "saved replicas of %s", w.name)
	g.Expect(s.pvc).To(Equal(before.pvc), "volume claim of %s replaced", w.name)
	g.Expect(s.nsUID).To(Equal(before.nsUID), "namespace of %s replaced", w.name)
	g.Expect(s.pausedSet).To(BeTrue(), "ServiceSet of %s paused", w.name)
	if rig != nil {
		g.Expect(s.gitFileFound).To(BeTrue(), "ServiceSet file of %s", w.name)
		g.Expect(s.pausedInGit).To(BeTrue(), "ServiceSet file of %s paused", w.name)
	}
}

// isRunningAgain checks a started workspace: Running with an admission, its
// Deployment at its count again without the saved one, the same volume
// claim and namespace, its ServiceSet (and file) without the pause.
func (f *fleet) isRunningAgain(g Gomega, w *workspace, before hubState, rig *gitRig) {
	obj := f.get(g, w)
	g.Expect(obj.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "workspace %s: %s", w.name, obj.Status.Message)
	g.Expect(obj.Status.Admission).NotTo(BeNil(), "workspace %s admitted", w.name)
	g.Expect(obj.Status.Lifecycle).NotTo(BeNil())
	g.Expect(obj.Status.Lifecycle.StopRequestedAt).To(BeNil())
	g.Expect(obj.Status.Lifecycle.StoppedAt).To(BeNil())
	s := f.hub(g, w, rig)
	g.Expect(s.replicas).To(Equal(before.replicas), "Deployment of %s", w.name)
	g.Expect(s.saved).To(BeEmpty(), "saved replicas of %s left", w.name)
	g.Expect(s.pvc).To(Equal(before.pvc), "volume claim of %s replaced", w.name)
	g.Expect(s.nsUID).To(Equal(before.nsUID), "namespace of %s replaced", w.name)
	g.Expect(s.pausedSet).To(BeFalse(), "ServiceSet of %s still paused", w.name)
	if rig != nil {
		g.Expect(s.gitFileFound).To(BeTrue(), "ServiceSet file of %s", w.name)
		g.Expect(s.pausedInGit).To(BeFalse(), "ServiceSet file of %s still paused", w.name)
	}
}

func conditionOf(obj *workspacesv1.WorkspaceDeployment, typ string) *metav1.Condition {
	for i := range obj.Status.Conditions {
		if obj.Status.Conditions[i].Type == typ {
			return &obj.Status.Conditions[i]
		}
	}
	return nil
}
