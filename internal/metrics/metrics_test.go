package metrics

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

// gathered returns the families of controller-runtime's registry by name,
// as the metrics endpoint serves them.
func gathered(g Gomega) map[string]*dto.MetricFamily {
	fams, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the metrics of a family whose labels include want.
func series(f *dto.MetricFamily, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		ok := true
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func TestRegisteredOnControllerRuntimesRegistry(t *testing.T) {
	g := NewWithT(t)
	// Registering again fails: every collector is already there.
	for _, c := range Collectors() {
		err := ctrlmetrics.Registry.Register(c)
		g.Expect(errors.As(err, &prometheus.AlreadyRegisteredError{})).To(BeTrue(), "%v", err)
	}
	SetBuildInfo("1.2.3", "abc")
	g.Expect(testutil.ToFloat64(buildInfo.WithLabelValues("1.2.3", "abc", runtime.Version()))).To(Equal(1.0))
	g.Expect(testutil.CollectAndLint(buildInfo)).To(BeEmpty())
}

func TestReconcileDurationIsPerObjectAndForgotten(t *testing.T) {
	g := NewWithT(t)
	key := types.NamespacedName{Namespace: "team-a", Name: "nb"}
	ObserveReconcile(KindWorkspaceDeployment, key, time.Now().Add(-2*time.Second))
	ObserveReconcile(KindWorkspaceDeployment, key, time.Now())
	f := gathered(g)["apiary_reconcile_duration_seconds"]
	g.Expect(f).NotTo(BeNil())
	ms := series(f, map[string]string{"kind": KindWorkspaceDeployment, "name": "nb", "namespace": "team-a"})
	g.Expect(ms).To(HaveLen(1))
	h := ms[0].GetHistogram()
	g.Expect(h.GetSampleCount()).To(Equal(uint64(2)))
	g.Expect(h.GetSampleSum()).To(BeNumerically(">=", 2))
	g.Expect(h.GetBucket()).To(HaveLen(10), "Flux's ten buckets")
	g.Expect(h.GetBucket()[0].GetUpperBound()).To(BeNumerically("~", 0.01, 1e-9))
	g.Expect(h.GetBucket()[9].GetUpperBound()).To(BeNumerically("~", 1800, 1e-6))

	ForgetObject(KindWorkspaceDeployment, key)
	g.Expect(series(gathered(g)["apiary_reconcile_duration_seconds"], map[string]string{"name": "nb", "namespace": "team-a"})).To(BeEmpty())
}

func TestTimeToRunningOncePerWorkspace(t *testing.T) {
	g := NewWithT(t)
	before := testutil.CollectAndCount(timeToRunning)
	count := func() uint64 {
		m := &dto.Metric{}
		g.Expect(timeToRunning.Write(m)).To(Succeed())
		return m.GetHistogram().GetSampleCount()
	}
	g.Expect(before).To(Equal(1), "the histogram exists before any workspace runs")
	start := count()
	key := types.NamespacedName{Namespace: "team-a", Name: "once"}
	ObserveTimeToRunning(key, "uid-1", time.Now().Add(-90*time.Second))
	ObserveTimeToRunning(key, "uid-1", time.Now().Add(-95*time.Second)) // a stale repeat
	g.Expect(count()).To(Equal(start + 1))
	ObserveTimeToRunning(key, "uid-2", time.Now()) // the name again, a new workspace
	g.Expect(count()).To(Equal(start + 2))
	ForgetObject(KindWorkspaceDeployment, key)
	ObserveTimeToRunning(key, "uid-2", time.Now())
	g.Expect(count()).To(Equal(start+3), "forgotten with the workspace")
}

func TestGitCountersStartAtZeroWithoutCredentials(t *testing.T) {
	g := NewWithT(t)
	r := Git("https://user:secret@git.example.com/fleet.git?token=x")
	g.Expect(Git("https://other:pw@git.example.com/fleet.git")).To(BeIdenticalTo(r), "one recorder per remote")
	pushes := series(gathered(g)["apiary_git_pushes_total"], map[string]string{"repository": "https://git.example.com/fleet.git"})
	g.Expect(pushes).To(HaveLen(len(PushResults)))
	for _, m := range pushes {
		g.Expect(m.GetCounter().GetValue()).To(BeZero())
	}
	r.Committed()
	r.Pushed(PushNonFastForward)
	r.Retried()
	r.Pushed(PushSucceeded)
	r.Pushed("something else")
	label := "https://git.example.com/fleet.git"
	g.Expect(testutil.ToFloat64(gitCommits.WithLabelValues(label))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(gitPushRetries.WithLabelValues(label))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(gitPushes.WithLabelValues(label, PushSucceeded))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(gitPushes.WithLabelValues(label, PushError))).To(Equal(1.0))
	for name := range gathered(g) {
		g.Expect(name).NotTo(ContainSubstring("secret"))
	}
	g.Expect(RepositoryLabel("%zz")).To(Equal("unparsable"))
}

func TestSyncTrackerObservesEachCommitOnce(t *testing.T) {
	g := NewWithT(t)
	remote := "https://git.example.com/sync-tracker.git"
	tr := NewSyncTracker(remote)
	samples := func() uint64 {
		m := &dto.Metric{}
		g.Expect(gitSyncLatency.WithLabelValues(remote).(prometheus.Histogram).Write(m)).To(Succeed())
		return m.GetHistogram().GetSampleCount()
	}
	history := map[string][]string{"c3": {"c1", "c2", "c3"}, "c2": {"c1", "c2"}} // applied -> what it contains
	contains := func(applied string) func(string) (bool, error) {
		return func(sha string) (bool, error) {
			for _, c := range history[applied] {
				if c == sha {
					return true, nil
				}
			}
			return false, nil
		}
	}
	tr.Applied("c0", contains("c0")) // nothing pushed yet
	tr.Pushed("c1", time.Now().Add(-30*time.Second))
	tr.Pushed("c2", time.Now().Add(-20*time.Second))
	tr.Pushed("c3", time.Now())
	tr.Applied("c2", contains("c2"))
	g.Expect(samples()).To(Equal(uint64(2)), "c1 and c2 are in c2")
	tr.Applied("c2", func(string) (bool, error) { panic("an applied revision handled before costs nothing") })
	tr.Applied("c3", func(string) (bool, error) { return false, errors.New("object missing") })
	g.Expect(samples()).To(Equal(uint64(2)))
	tr.Applied("c3", contains("c3")) // retried after the error
	g.Expect(samples()).To(Equal(uint64(3)))
	tr.Applied("c4", contains("c4"))
	g.Expect(samples()).To(Equal(uint64(3)), "nothing is pending")
}

func TestGateFreeGPUs(t *testing.T) {
	g := NewWithT(t)
	cd := types.NamespacedName{Namespace: "team-a", Name: "gate-free"}
	nodes := []admission.Node{
		{Name: "n1", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: 8}}},
		{Name: "n2", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: 2}}},
		{Name: "n3", Schedulable: false, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: 4}}},
		{Name: "n4", Schedulable: true, GPUs: []admission.GPU{{Resource: "amd.com/gpu", Allocatable: 4}}},
	}
	snap := admission.Snapshot{
		Nodes: nodes,
		Pods: []admission.Pod{
			{Node: "n1", GPUs: map[string]int64{"nvidia.com/gpu": 1}},
			{Node: "n2", GPUs: map[string]int64{"nvidia.com/gpu": 3}}, // more than the node offers
			{Node: "n4", Workspace: "team-a/old", GPUs: map[string]int64{"amd.com/gpu": 2}},
		},
		Workspaces: []admission.Workspace{
			{Key: "team-a/old", UID: "1", Created: time.Unix(1, 0), Admitted: &admission.Admission{
				Request:   admission.Request{Resource: "amd.com/gpu", PerReplica: 2, Replicas: 2},
				Placement: []admission.Slot{{Node: "n4", GPUs: 2}, {Node: "n4", GPUs: 2}}}},
			{Key: "team-a/new", UID: "2", Created: time.Unix(2, 0),
				Pending: &admission.Request{Resource: "nvidia.com/gpu", PerReplica: 4, Replicas: 1}},
		},
	}
	ObserveGate(cd, snap, admission.Plan(snap, admission.StrictFIFO), "team-a/new")
	// n1: 8 - 1 pod - 4 admitted now; n2: none (its pod takes more than it has);
	// n3 is cordoned; n4: 4 - 2 bound - 2 still reserved.
	g.Expect(freeGPUs()[cd]).To(Equal(map[string]int64{"nvidia.com/gpu": 3, "amd.com/gpu": 0}))

	ObserveGate(cd, snap, admission.Plan(snap, admission.StrictFIFO), "team-a/other")
	g.Expect(freeGPUs()[cd]).To(HaveKeyWithValue("nvidia.com/gpu", int64(7)), "without the candidate's admission")
	forgetGate(map[types.NamespacedName]bool{})
	g.Expect(freeGPUs()).NotTo(HaveKey(cd))
}

// waitingWorkspace is a Waiting workspace held by a condition's reason.
func waitingWorkspace(name, condition, reason string) *workspacesv1.WorkspaceDeployment {
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "state", Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1"}}}
	w.Status.Phase = workspacesv1.PhaseWaiting
	conditions.MarkFalse(w, condition, reason, "waiting")
	return w
}

func TestStateFromTheCache(t *testing.T) {
	g := NewWithT(t)
	running := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "state", Name: "running"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1"}},
		Status: workspacesv1.WorkspaceDeploymentStatus{Phase: workspacesv1.PhaseRunning, Admission: &workspacesv1.WorkspaceAdmission{
			Cluster: "state/c1", ResourceName: "nvidia.com/gpu", GPUsPerReplica: 2, Replicas: 3}}}
	failed := running.DeepCopy()
	failed.Name, failed.Status.Phase = "failed", workspacesv1.PhaseFailed // keeps its reservation
	failed.Status.Admission.Replicas = 1
	unadmitted := running.DeepCopy()
	unadmitted.Name, unadmitted.Status.Admission = "pending", nil
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: "state", Name: "fleet"}}
	colony.Status.GPUInventory = map[string]infrav1.ClusterGPUInventory{"c1": {Offerings: []infrav1.GPUOffering{
		{ResourceName: "nvidia.com/gpu", Total: 8}, {ResourceName: "nvidia.com/gpu", Total: 4}}}}
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: quotav1alpha1.TenantQuotaSpec{
		Hard: quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "h100", Count: 8}, {Name: "any", Count: 16}}}}}
	q.Status.Hard = *q.Spec.Hard.DeepCopy()
	q.Status.Used.GPUs = []quotav1alpha1.GPUUsage{{Name: "h100", Count: 6}}
	lender := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}, Spec: quotav1alpha1.TenantQuotaSpec{Cohort: "lab",
		Hard: quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "h100", Count: 4}}}}}
	lender.Status.Hard = *lender.Spec.Hard.DeepCopy()
	lender.Status.Used.GPUs = []quotav1alpha1.GPUUsage{{Name: "h100", Count: 3, Lent: 2}}
	c := fake.NewClientBuilder().WithScheme(apiaryscheme.New()).WithObjects(running, failed, unadmitted, colony, q, lender,
		waitingWorkspace("w1", workspacesv1.GPUCapacityCondition, workspacesv1.WaitingBehindOlderReason),
		waitingWorkspace("w2", workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason),
		waitingWorkspace("w3", workspacesv1.GPUCapacityCondition, workspacesv1.WaitingBehindOlderReason),
	).Build()
	ObserveGate(types.NamespacedName{Namespace: "state", Name: "c1"}, admission.Snapshot{Nodes: []admission.Node{
		{Name: "n1", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: 8}}}}}, nil, "")
	ObserveGate(types.NamespacedName{Namespace: "state", Name: "gone"}, admission.Snapshot{}, nil, "")

	yes := func() bool { return true }
	SetSource(&Source{Reader: c, Colonies: yes, Workspaces: yes})
	t.Cleanup(func() { SetSource(nil) })
	g.Expect(testutil.CollectAndCompare(state, strings.NewReader(`
# HELP apiary_gpus_admitted GPUs reserved on a cluster by the admissions in force of its workspaces (a Failed one keeps its own), by GPU resource.
# TYPE apiary_gpus_admitted gauge
apiary_gpus_admitted{cluster_deployment="state/c1",resource="nvidia.com/gpu"} 8
# HELP apiary_gpus_capacity GPUs the schedulable nodes of a cluster offer, from its Colony's GPU inventory.
# TYPE apiary_gpus_capacity gauge
apiary_gpus_capacity{cluster_deployment="state/c1",resource="nvidia.com/gpu"} 12
# HELP apiary_tenantquota_gpus_used GPUs of a TenantQuota's GPU limit that admitted workspaces use.
# TYPE apiary_tenantquota_gpus_used gauge
apiary_tenantquota_gpus_used{limit="any",tenantquota="team-a"} 0
apiary_tenantquota_gpus_used{limit="h100",tenantquota="team-a"} 6
apiary_tenantquota_gpus_used{limit="h100",tenantquota="team-b"} 3
# HELP apiary_tenantquota_gpus_lent GPUs of a TenantQuota's GPU limit lent to other members of its cohort.
# TYPE apiary_tenantquota_gpus_lent gauge
apiary_tenantquota_gpus_lent{limit="h100",tenantquota="team-b"} 2
# HELP apiary_workspaces_waiting WorkspaceDeployments in phase Waiting, by the reason of the GPU gate or quota that holds them.
# TYPE apiary_workspaces_waiting gauge
apiary_workspaces_waiting{reason="GpuCapacityFragmented"} 0
apiary_workspaces_waiting{reason="QuotaExceeded"} 1
apiary_workspaces_waiting{reason="WaitingBehindOlderWorkspaces"} 2
apiary_workspaces_waiting{reason="WaitingForGpuCapacity"} 0
`), "apiary_gpus_admitted", "apiary_gpus_capacity", "apiary_tenantquota_gpus_used", "apiary_tenantquota_gpus_lent", "apiary_workspaces_waiting")).To(Succeed())
	g.Expect(series(gathered(g)["apiary_tenantquota_gpus_borrowed"], nil)).To(HaveLen(1), "only for quotas in a cohort or holding loans")
	fams := gathered(g)
	g.Expect(series(fams["apiary_workspaces"], map[string]string{"phase": "Running"})[0].GetGauge().GetValue()).To(Equal(2.0))
	g.Expect(series(fams["apiary_workspaces"], map[string]string{"phase": "Deploying"})[0].GetGauge().GetValue()).To(Equal(0.0))
	g.Expect(fams["apiary_workspaces"].GetMetric()).To(HaveLen(len(WorkspacePhases)))
	g.Expect(series(fams["apiary_gpus_free"], nil)).To(HaveLen(1), "only clusters that workspaces target")
	g.Expect(series(fams["apiary_tenantquota_gpus_hard"], map[string]string{"limit": "any"})[0].GetGauge().GetValue()).To(Equal(16.0))
	g.Expect(testutil.CollectAndLint(state)).To(BeEmpty())

	// A standby replica (or one whose controllers wait for CRDs) reports no state.
	SetSource(&Source{Reader: c, Colonies: func() bool { return false }, Workspaces: func() bool { return false }})
	g.Expect(testutil.CollectAndCount(state)).To(BeZero())
}

func TestActivityProbesCountResultsAndDurations(t *testing.T) {
	g := NewWithT(t)
	const source = "TestSource"
	count := func(result string) float64 { return testutil.ToFloat64(activityProbes.WithLabelValues(source, result)) }
	ObserveActivityProbe(source, ActivityKnown, 20*time.Millisecond)
	ObserveActivityProbe(source, ActivityUnknown, time.Second)
	ObserveActivityProbe(source, "not a result", time.Second)
	g.Expect(count(ActivityKnown)).To(Equal(1.0))
	g.Expect(count(ActivityUnknown)).To(Equal(1.0))
	g.Expect(count(ActivityError)).To(Equal(1.0), "an unknown result counts as an error")
	g.Expect(series(gathered(g)["apiary_workspace_activity_probes_total"], map[string]string{"source": source, "result": "not a result"})).To(BeEmpty())

	ms := series(gathered(g)["apiary_workspace_activity_probe_duration_seconds"], map[string]string{"source": source})
	g.Expect(ms).To(HaveLen(1))
	g.Expect(ms[0].GetHistogram().GetSampleCount()).To(Equal(uint64(3)))
	g.Expect(ms[0].GetHistogram().GetSampleSum()).To(BeNumerically("~", 2.02, 1e-9))
	g.Expect(testutil.CollectAndLint(activityProbes)).To(BeEmpty())
	g.Expect(testutil.CollectAndLint(activityProbeDuration)).To(BeEmpty())
}
