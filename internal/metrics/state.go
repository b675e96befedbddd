package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/resources"
	"github.com/apiaryhq/apiary/internal/workspace/status"
)

// Source is where the state metrics are read at scrape time.
type Source struct {
	// Reader is the manager's informer cache; lists are read without copies.
	Reader client.Reader
	// Colonies and Workspaces report whether their kinds may be read: the
	// replica is elected and the controllers that watch them run, so the
	// informers exist and a scrape starts none. Nil means false.
	Colonies, Workspaces func() bool
	// Quotas reports whether TenantQuotas may be read; Workspaces when nil.
	Quotas func() bool
	// Counts, when set, says which workspaces of the cache this replica
	// reports: a shard those of its own buckets, so that sums over shards
	// count each workspace once. Every workspace when nil.
	Counts func(*workspacesv1.WorkspaceDeployment) bool
	// Children is the child-cluster manager; nil reports no child caches.
	Children *childcluster.Manager
}

// SetSource sets where the state metrics are read; nil stops them. The last
// manager of the process to call it wins.
func SetSource(s *Source) { state.source.Store(s) }

// WorkspacePhases are the phases apiary_workspaces always reports, at zero
// when no workspace is in one.
var WorkspacePhases = []workspacesv1.WorkspacePhase{
	workspacesv1.PhasePending, workspacesv1.PhaseInstallingPrerequisites, workspacesv1.PhaseWaiting,
	workspacesv1.PhaseDeploying, workspacesv1.PhaseRunning, workspacesv1.PhaseStopped, workspacesv1.PhaseFailed, workspacesv1.PhaseDeleting,
}

// WaitingReasons are the reasons apiary_workspaces_waiting always reports:
// those of the GPU gate and of the tenant quotas.
var WaitingReasons = []string{
	workspacesv1.WaitingForGPUCapacityReason, workspacesv1.GPUCapacityFragmentedReason,
	workspacesv1.WaitingBehindOlderReason, workspacesv1.QuotaExceededReason,
}

// scrapeTimeout bounds the cache reads of one scrape.
const scrapeTimeout = 5 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

var state = &stateCollector{
	workspaces: desc("workspaces", "WorkspaceDeployments by phase.", "phase"),
	waiting: desc("workspaces_waiting", "WorkspaceDeployments in phase Waiting, by the reason of the GPU gate or quota that holds them.",
		"reason"),
	gpusAdmitted: desc("gpus_admitted", "GPUs reserved on a cluster by the admissions in force of its workspaces (a Failed one keeps its own), by GPU resource.",
		"cluster_deployment", "resource"),
	gpusFree: desc("gpus_free", "GPUs free on a cluster's schedulable nodes as the GPU gate computed them at its last decision there: "+
		"allocatable minus bound pods and admitted reservations; reported while workspaces target the cluster.",
		"cluster_deployment", "resource"),
	gpusCapacity: desc("gpus_capacity", "GPUs the schedulable nodes of a cluster offer, from its Colony's GPU inventory.",
		"cluster_deployment", "resource"),
	quotaGPUsUsed:     desc("tenantquota_gpus_used", "GPUs of a TenantQuota's GPU limit that admitted workspaces use.", "tenantquota", "limit"),
	quotaGPUsHard:     desc("tenantquota_gpus_hard", "The GPU limits a TenantQuota enforces (status.hard).", "tenantquota", "limit"),
	quotaGPUsBorrowed: desc("tenantquota_gpus_borrowed", "GPUs of a TenantQuota's GPU limit that its workspaces borrow from its cohort.", "tenantquota", "limit"),
	quotaGPUsLent:     desc("tenantquota_gpus_lent", "GPUs of a TenantQuota's GPU limit lent to other members of its cohort.", "tenantquota", "limit"),
	tenantGPUSeconds: desc("tenant_gpu_seconds_total", "GPU-seconds a TenantQuota's workspaces held (counted on its status and held now), by GPU resource and model.",
		"tenant", "resource", "model"),
	tenantCPUSeconds:    desc("tenant_cpu_seconds_total", "CPU core-seconds a TenantQuota's workspaces held.", "tenant"),
	tenantMemorySeconds: desc("tenant_memory_byte_seconds_total", "Memory byte-seconds a TenantQuota's workspaces held.", "tenant"),
	cachesOpen:          desc("child_cluster_caches_open", "Informer caches of child clusters that run."),
	unreachable: desc("child_cluster_unreachable", "1 while Apiary cannot reach a child cluster's API server (its cache lost it, or could not start), else 0.",
		"cluster_deployment"),
}

// stateCollector computes the state metrics from the Source at each scrape.
type stateCollector struct {
	source atomic.Pointer[Source]

	workspaces, waiting, gpusAdmitted, gpusFree, gpusCapacity *prometheus.Desc
	quotaGPUsUsed, quotaGPUsHard, cachesOpen, unreachable     *prometheus.Desc
	quotaGPUsBorrowed, quotaGPUsLent                          *prometheus.Desc

	tenantGPUSeconds, tenantCPUSeconds, tenantMemorySeconds *prometheus.Desc
	// counted is the last value of each usage counter reported: a scrape
	// that reads a quota and its workspaces a write apart never reports
	// less (a counter that falls reads as a reset).
	counted monotone
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.workspaces, c.waiting, c.gpusAdmitted, c.gpusFree, c.gpusCapacity,
		c.quotaGPUsUsed, c.quotaGPUsHard, c.quotaGPUsBorrowed, c.quotaGPUsLent, c.cachesOpen, c.unreachable, c.tenantGPUSeconds, c.tenantCPUSeconds, c.tenantMemorySeconds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.source.Load()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if s.Children != nil {
		open := 0
		for _, st := range s.Children.States() {
			if st.CacheOpen {
				open++
			}
			gauge(c.unreachable, boolValue(st.Unreachable), st.Cluster.String())
		}
		gauge(c.cachesOpen, float64(open))
	}
	if s.Reader == nil {
		return
	}
	if s.Colonies != nil && s.Colonies() {
		c.collectColonies(ctx, s.Reader, gauge)
	}
	if s.Workspaces != nil && s.Workspaces() {
		c.collectWorkspaces(ctx, s.Reader, s.Counts, gauge)
		if s.Quotas == nil {
			c.collectQuotas(ctx, s.Reader, ch, gauge)
		}
	}
	if s.Quotas != nil && s.Quotas() {
		c.collectQuotas(ctx, s.Reader, ch, gauge)
	}
}

type gaugeFunc func(d *prometheus.Desc, v float64, labels ...string)

func (c *stateCollector) collectColonies(ctx context.Context, r client.Reader, gauge gaugeFunc) {
	list := &infrav1.ColonyList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").V(1).Info("listing Colonies for metrics failed", "error", err.Error())
		return
	}
	capacity := map[[2]string]int64{}
	for i := range list.Items {
		col := &list.Items[i]
		for cd, inv := range col.Status.GPUInventory {
			cluster := types.NamespacedName{Namespace: col.Namespace, Name: cd}.String()
			for _, o := range inv.Offerings {
				capacity[[2]string{cluster, o.ResourceName}] = resources.SatAdd(capacity[[2]string{cluster, o.ResourceName}], max(o.Total, 0))
			}
		}
	}
	for k, v := range capacity {
		gauge(c.gpusCapacity, float64(v), k[0], k[1])
	}
}

func (c *stateCollector) collectWorkspaces(ctx context.Context, r client.Reader, counts func(*workspacesv1.WorkspaceDeployment) bool, gauge gaugeFunc) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").V(1).Info("listing WorkspaceDeployments for metrics failed", "error", err.Error())
		return
	}
	phases := map[string]int{}
	for _, p := range WorkspacePhases {
		phases[string(p)] = 0
	}
	waiting := map[string]int{}
	for _, r := range WaitingReasons {
		waiting[r] = 0
	}
	admitted := map[[2]string]int64{}
	targeted := map[types.NamespacedName]bool{}
	for i := range list.Items {
		w := &list.Items[i]
		if counts != nil && !counts(w) {
			continue
		}
		phase := w.Status.Phase
		if phase == "" {
			phase = workspacesv1.PhasePending
		}
		phases[string(phase)]++
		if phase == workspacesv1.PhaseWaiting {
			waiting[status.WaitingReason(w)]++
		}
		targeted[clusterOf(w)] = true
		if a := w.Status.Admission; a != nil && a.GPUsPerReplica != 0 {
			// As its quotas count it: a record past counting counts as math.MaxInt64.
			c, _ := resources.AdmissionCharge(a)
			k := [2]string{a.Cluster, a.ResourceName}
			admitted[k] = resources.SatAdd(admitted[k], c.GPUs)
		}
	}
	for p, n := range phases {
		gauge(c.workspaces, float64(n), p)
	}
	for reason, n := range waiting {
		gauge(c.waiting, float64(n), reason)
	}
	for k, n := range admitted {
		gauge(c.gpusAdmitted, float64(n), k[0], k[1])
	}
	forgetGate(targeted)
	for cd, free := range freeGPUs() {
		for res, n := range free {
			gauge(c.gpusFree, float64(n), cd.String(), res)
		}
	}
}

func (c *stateCollector) collectQuotas(ctx context.Context, r client.Reader, ch chan<- prometheus.Metric, gauge gaugeFunc) {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").V(1).Info("listing TenantQuotas for metrics failed", "error", err.Error())
		return
	}
	workspaces := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, workspaces, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.Log.WithName("metrics").V(1).Info("listing workspaces for metrics failed", "error", err.Error())
		workspaces.Items = nil
	}
	now := time.Now()
	members := quota.MembersByQuota(workspaces.Items)
	for i := range list.Items {
		q := &list.Items[i]
		c.collectUsage(ch, q, members[q.Name], now)
		used := map[string]quotav1alpha1.GPUUsage{}
		for _, u := range q.Status.Used.GPUs {
			used[u.Name] = u
		}
		for _, l := range q.Status.Hard.GPUs {
			u := used[l.Name]
			gauge(c.quotaGPUsHard, float64(l.Count), q.Name, l.Name)
			gauge(c.quotaGPUsUsed, float64(u.Count), q.Name, l.Name)
			if q.Spec.Cohort != "" || u.Borrowed > 0 || u.Lent > 0 {
				gauge(c.quotaGPUsBorrowed, float64(u.Borrowed), q.Name, l.Name)
				gauge(c.quotaGPUsLent, float64(u.Lent), q.Name, l.Name)
			}
		}
	}
}

// clusterOf is the ClusterDeployment a workspace targets.
func clusterOf(w *workspacesv1.WorkspaceDeployment) types.NamespacedName {
	ns := w.Spec.ClusterDeploymentRef.Namespace
	if ns == "" {
		ns = w.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: w.Spec.ClusterDeploymentRef.Name}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ShardCachedObjects is how many objects of each kind a shard caches by
// bucket (workspaces, ServiceSets, Secrets), by informer: own (the shard's
// buckets) or unbucketed (no valid bucket label). The manager's split
// cache collects it: what a user checks to see that shards divide the
// cache.
var ShardCachedObjects = desc("shard_cached_objects",
	"Objects of the kinds a shard caches by bucket (workspaces, ServiceSets, Secrets) held in its cache, by kind and informer: "+
		"own (the shard's buckets) or unbucketed (no valid bucket label).", "kind", "informer")
