package scale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkScale creates APIARY_SCALE_CLUSTERS ready ClusterDeployments
// (50) and starts the manager as its own process, then creates
// APIARY_SCALE_WORKSPACES workspaces (1,000) spread over the clusters, and
// reports the time until every ServiceSet exists and every workspace is
// Running, the manager's requests per workspace to the management and the
// child cluster, the Deployed-to-Running reaction, the manager's peak RSS
// and its RSS at steady state, where it also saves a heap profile
// (APIARY_SCALE_PROFILE, else a file under the system's temp folder, whose
// path is printed). Releases install instantly (the stand-in reports them
// Deployed without Helm), so the figures are Apiary's; APIARY_SCALE_HELM=1
// installs them with Helm's SDK on the child instead. APIARY_SCALE_SHARDS=N
// runs N shards (--shards N, one process each): requests, CPU and resident
// sets are then the replicas' sums, each replica's peak is logged and the
// largest reported, and the heap profile is shard 0's. It also reports the
// resident set's anonymous and file-backed parts, and the manager's CPU
// time during the rollout. For investigations: APIARY_SCALE_PEAK_PROFILE
// saves a heap profile near the peak (each new peak, at most every 5 s; the
// requests perturb what they measure a little), APIARY_SCALE_MANAGER_LOG
// keeps the manager's log (run with GODEBUG=gctrace=1 to see its
// collections), and APIARY_SCALE_BINARY runs a manager built elsewhere.
//
//	make testenv && KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.35.4-etcd3.6.16 \
//	  go test ./test/scale -run '^$' -bench Scale -benchtime 1x -timeout 120m
func BenchmarkScale(b *testing.B) {
	total, nclusters := envInt("APIARY_SCALE_WORKSPACES", 1000), envInt("APIARY_SCALE_CLUSTERS", 50)
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		c := clusters.Management.Client
		ns := clusters.Management.NewNamespace(b, "scale")
		builder.Templates(b, c, ns)
		template := "tmpl" // installed with Helm's SDK on the child
		if os.Getenv("APIARY_SCALE_HELM") == "" {
			// Instant installs: what is measured is Apiary, not Helm.
			template = "instant"
			tpl := standin.NewServiceTemplate(ns, template, true, map[string]string{standin.AnnotationInstant: "true"})
			if err := standin.CreateWithStatus(ctx, c, tpl); err != nil {
				b.Fatal(err)
			}
		}
		for n := range nclusters {
			if err := c.Create(ctx, standin.NewClusterDeployment(ns, fmt.Sprintf("c%03d", n), "tpl", "cred")); err != nil {
				b.Fatal(err)
			}
		}
		world.WaitFor(b, 10*time.Minute, "every cluster Ready", func() bool {
			list := &k0rdentv1beta1.ClusterDeploymentList{}
			if c.List(ctx, list, client.InNamespace(ns)) != nil {
				return false
			}
			ready := 0
			for _, cd := range list.Items {
				if apimeta.IsStatusConditionTrue(cd.Status.Conditions, k0rdentv1beta1.ReadyCondition) {
					ready++
				}
			}
			return ready == nclusters
		})
		class := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "scale-" + ns},
			Spec: workspacesv1.WorkspaceClassSpec{DisplayName: "scale", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: template, Namespace: ns}}}
		if err := c.Create(ctx, class); err != nil {
			b.Fatal(err)
		}

		// With APIARY_SCALE_SHARDS=N the manager runs as N shards, each a
		// process of its own with its Lease in the benchmark's namespace.
		shards := envInt("APIARY_SCALE_SHARDS", 1)
		ms := make(replicas, 0, shards)
		for i := range shards {
			var args []string
			if shards > 1 {
				args = []string{"--shards", strconv.Itoa(shards), "--shard", strconv.Itoa(i), "--leader-election-namespace", ns}
			}
			ms = append(ms, startManager(b, fmt.Sprintf("manager-%d.log", i), args...))
		}
		m := ms[0]
		ms.settle(b, 2*time.Second, time.Minute, 0)
		rate := ms.leaseRate(b, 20*time.Second)
		if shards > 1 {
			ms.settle(b, 3*time.Second, time.Minute, rate)
		}
		before := ms.requests(b)
		idleRSS, idleAnon := ms.sum(func(m *manager) int64 { return m.rss("VmRSS") }), ms.sum(func(m *manager) int64 { return m.rss("RssAnon") })
		watchCtx, stopWatching := context.WithCancel(ctx)
		react, err := managertest.WatchReactions(watchCtx, clusters.Management.Config, ns)
		if err != nil {
			b.Fatal(err)
		}
		start, cpuBefore := time.Now(), ms.cpuSeconds()
		for w := range total {
			ws := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w%05d", w)},
				Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class.Name,
					ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: fmt.Sprintf("c%03d", w%nclusters), Namespace: ns}}}
			if err := c.Create(ctx, ws); err != nil {
				b.Fatal(err)
			}
		}
		world.WaitFor(b, 60*time.Minute, "every ServiceSet exists", func() bool {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(k0rdentv1beta1.GroupVersion.WithKind("ServiceSetList"))
			return c.List(ctx, list, client.InNamespace(ns)) == nil && len(list.Items) >= total
		})
		sets := time.Since(start) // from the first create
		world.WaitFor(b, 120*time.Minute, "every workspace Running", func() bool {
			list := &workspacesv1.WorkspaceDeploymentList{}
			if c.List(ctx, list, client.InNamespace(ns)) != nil {
				return false
			}
			n := 0
			for _, w := range list.Items {
				if w.Status.Phase == workspacesv1.PhaseRunning {
					n++
				}
			}
			return n == total
		})
		running := time.Since(start)
		ms.settle(b, 3*time.Second, 5*time.Minute, rate)
		stopWatching()
		after := ms.requests(b)
		// The shards' Lease renewals, at the rate measured while idle, are
		// not the workspaces' requests.
		leases := rate * time.Since(start).Seconds()
		mgmtHost, childHost := hostOf(b, clusters.Management.Config.Host), hostOf(b, clusters.Child.Config.Host)
		p50, slowest, reacted := react.Figures()
		steadyRSS, steadyAnon := ms.sum(func(m *manager) int64 { return m.rss("VmRSS") }), ms.sum(func(m *manager) int64 { return m.rss("RssAnon") })
		peaks := ms.peaks()
		cpu := ms.cpuSeconds() - cpuBefore // the rollout's, from the first create to the settled requests
		profile := os.Getenv("APIARY_SCALE_PROFILE")
		if profile == "" {
			profile = filepath.Join(os.TempDir(), fmt.Sprintf("apiary-heap-%dw-%dc.pprof", total, nclusters))
		}
		m.heapProfile(b, profile)
		if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", m.Pid())); err == nil {
			_ = os.WriteFile(profile+".smaps", smaps, 0o644) // the resident set by mapping
		}
		b.Logf("heap profile at steady state: %s (go tool pprof -top -sample_index=inuse_space %s); "+
			"its text with the runtime's MemStats: %[1]s.txt; the resident set by mapping: %[1]s.smaps", profile, profile)
		for _, r := range ms {
			r.kill()
		}

		if shards > 1 {
			// Each replica's own peak; the figures below are the sums.
			b.Logf("%d shards: peak RSS per replica (MiB) %v", shards, peaks)
			b.ReportMetric(float64(shards), "replicas")
			b.ReportMetric(slices.Max(peaks), "max-replica-peak-RSS-MiB")
			b.ReportMetric(rate, "lease-requests/s")
		}
		b.ReportMetric(sets.Seconds(), "s-to-servicesets")
		b.ReportMetric(running.Seconds(), "s-to-running")
		b.ReportMetric((after[mgmtHost]-before[mgmtHost]-leases)/float64(total), "mgmt-requests/workspace")
		b.ReportMetric((after[childHost]-before[childHost])/float64(total), "child-requests/workspace")
		b.ReportMetric(p50.Seconds(), "s-reaction-p50")
		b.ReportMetric(slowest.Seconds(), "s-reaction-max")
		b.ReportMetric(float64(reacted), "reactions-timed")
		b.ReportMetric(sumOf(peaks), "peak-RSS-MiB")
		b.ReportMetric(float64(steadyRSS)/(1<<20), "steady-RSS-MiB")
		b.ReportMetric(float64(idleRSS)/(1<<20), "idle-RSS-MiB")
		b.ReportMetric(float64(idleAnon)/(1<<20), "idle-anon-RSS-MiB")
		b.ReportMetric(float64(ms.sum(func(m *manager) int64 { return m.peakAnon.Load() }))/(1<<20), "peak-anon-RSS-MiB")
		b.ReportMetric(float64(ms.sum(func(m *manager) int64 { return m.peakFile.Load() }))/(1<<20), "peak-file-RSS-MiB")
		b.ReportMetric(cpu, "manager-CPU-s")
		b.ReportMetric(float64(steadyAnon)/(1<<20), "steady-anon-RSS-MiB")
	}
}
