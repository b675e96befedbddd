package controller_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// settle waits until Apiary made no request for quiet, then returns.
func settle(quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, since := controllertest.Requests.Management.Load(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if n := controllertest.Requests.Management.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkColony200 applies a Colony of 200 entries, waits until every
// ClusterDeployment exists and is ready, then triggers resyncs by changing
// the child's nodes (without touching GPUs) and counts Apiary's API requests
// per resync, against the requests of the cold apply as the baseline.
//
//	make testenv && KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.35.4-etcd3.6.16 \
//	  go test ./controllers -run '^$' -bench Colony200 -benchtime 1x -timeout 30m
func BenchmarkColony200(b *testing.B) {
	entries := envInt("APIARY_BENCH_ENTRIES", 200)
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		ns := controllertest.Env.NewNamespace(b, "bench-colony")
		k0rdentFixturesB(b, ns)
		colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns}}
		for e := range entries {
			colony.Spec.ColonyClusters = append(colony.Spec.ColonyClusters, controllertest.ColonyEntry(fmt.Sprintf("c%03d", e)))
		}
		reqs0, writes0 := controllertest.Requests.Management.Load(), controllertest.Requests.ManagementWrites.Load()
		if err := controllertest.Env.Client.Create(ctx, colony); err != nil {
			b.Fatal(err)
		}
		applied := world.WaitFor(b, 10*time.Minute, "all ClusterDeployments applied", func() bool {
			list := &k0rdentv1beta1.ClusterDeploymentList{}
			return controllertest.Env.Client.List(ctx, list, client.InNamespace(ns)) == nil && len(list.Items) == entries
		})
		ready := world.WaitFor(b, 10*time.Minute, "Colony ready", func() bool {
			c := &infrav1.Colony{}
			return controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(colony), c) == nil &&
				int(c.Status.ReadyClusters) == entries && c.Status.Phase == infrav1.ColonyPhaseReady
		})
		settle(3*time.Second, 2*time.Minute)
		coldReqs, coldWrites := controllertest.Requests.Management.Load()-reqs0, controllertest.Requests.ManagementWrites.Load()-writes0

		// Resyncs: a node without GPUs joins and leaves the child; every
		// cluster's cache sees it and the Colony reconciles.
		const resyncs = 5
		reqs1, writes1, recs1 := controllertest.Requests.Management.Load(), controllertest.Requests.ManagementWrites.Load(), managertest.Reconciles("colony")
		for r := range resyncs {
			name := fmt.Sprintf("%s-cpu-%d", ns, r)
			if err := standin.AddGPUNode(ctx, controllertest.ChildClient, name, nil, "", 0); err != nil {
				b.Fatal(err)
			}
			settle(2*time.Second, time.Minute)
		}
		steadyReqs, steadyWrites := controllertest.Requests.Management.Load()-reqs1, controllertest.Requests.ManagementWrites.Load()-writes1
		steadyRecs := managertest.Reconciles("colony") - recs1
		if steadyRecs == 0 {
			b.Fatal("the node changes triggered no Colony reconcile")
		}

		b.ReportMetric(applied.Seconds(), "s-to-applied")
		b.ReportMetric(ready.Seconds()+applied.Seconds(), "s-to-ready")
		b.ReportMetric(float64(coldReqs), "cold-requests")
		b.ReportMetric(float64(coldWrites), "cold-writes")
		b.ReportMetric(steadyRecs/resyncs, "reconciles/resync")
		b.ReportMetric(float64(steadyReqs)/resyncs, "requests/resync")
		b.ReportMetric(float64(steadyWrites)/resyncs, "writes/resync")
		b.ReportMetric(float64(steadyReqs)/resyncs/float64(max(coldReqs, 1)), "resync/cold-ratio")
		_ = controllertest.Env.Client.Delete(ctx, colony)
	}
}

func k0rdentFixturesB(b *testing.B, ns string) {
	b.Helper()
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "exalsius-remote-cluster-0-1-5", true),
		standin.NewCredential(ns, "remote-cred", true),
	} {
		if err := standin.CreateWithStatus(context.Background(), controllertest.Env.Client, obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorkspaces1000 deploys 1,000 workspaces over 50 clusters with the
// stand-in installing each release on the child, and reports the time until
// every ServiceSet exists and every workspace runs, and the peak heap. The
// baseline is the stand-in alone: the same number of ServiceSets created
// directly, without Apiary, in the same process.
//
//	make testenv && KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.35.4-etcd3.6.16 \
//	  go test ./controllers -run '^$' -bench Workspaces1000 -benchtime 1x -timeout 60m
func BenchmarkWorkspaces1000(b *testing.B) {
	total, clusters := envInt("APIARY_BENCH_WORKSPACES", 1000), envInt("APIARY_BENCH_CLUSTERS", 50)
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		ns := controllertest.Env.NewNamespace(b, "bench-ws")
		k0rdentFixturesB(b, ns)
		for c := range clusters {
			cd := standin.NewClusterDeployment(ns, fmt.Sprintf("c%02d", c), "exalsius-remote-cluster-0-1-5", "remote-cred")
			if err := controllertest.Env.Client.Create(ctx, cd); err != nil {
				b.Fatal(err)
			}
		}
		stB := &k0rdentv1beta1.ServiceTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: ns}}
		serviceTemplateB(b, stB)
		class := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + ns}, Spec: workspacesv1.WorkspaceClassSpec{
			DisplayName: "bench", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: ns}}}
		if err := controllertest.Env.Client.Create(ctx, class); err != nil {
			b.Fatal(err)
		}
		world.WaitFor(b, 5*time.Minute, "clusters ready", func() bool {
			list := &k0rdentv1beta1.ClusterDeploymentList{}
			if controllertest.Env.Client.List(ctx, list, client.InNamespace(ns)) != nil {
				return false
			}
			n := 0
			for _, cd := range list.Items {
				if c := controllertest.Condition(&cd, k0rdentv1beta1.ReadyCondition); c != nil && c.Status == metav1.ConditionTrue {
					n++
				}
			}
			return n == clusters
		})

		var peak atomic.Uint64
		stop := make(chan struct{})
		go samplePeak(&peak, stop)
		watchCtx, stopWatching := context.WithCancel(ctx)
		react, err := managertest.WatchReactions(watchCtx, controllertest.Env.Config, ns)
		if err != nil {
			b.Fatal(err)
		}
		var peakDepth atomic.Int64
		go samplePeakDepth("workspacedeployment", &peakDepth, stop)
		waitSum0, waitCount0 := queueWait("workspacedeployment")
		mark := controllertest.Requests.Mark()
		start := time.Now()
		for w := range total {
			wsd := controllertest.NewWorkspace(ns, fmt.Sprintf("w%04d", w), class.Name, fmt.Sprintf("c%02d", w%clusters))
			if err := controllertest.Env.Client.Create(ctx, wsd); err != nil {
				b.Fatal(err)
			}
		}
		created := time.Since(start)
		sets := world.WaitFor(b, 30*time.Minute, "every ServiceSet exists", func() bool {
			list := &k0rdentv1beta1.ServiceSetList{}
			return controllertest.Env.Client.List(ctx, list, client.InNamespace(ns)) == nil && len(list.Items) >= total
		}) + created
		running := world.WaitFor(b, 60*time.Minute, "every workspace Running", func() bool {
			list := &workspacesv1.WorkspaceDeploymentList{}
			if controllertest.Env.Client.List(ctx, list, client.InNamespace(ns)) != nil {
				return false
			}
			n := 0
			for _, w := range list.Items {
				if w.Status.Phase == workspacesv1.PhaseRunning {
					n++
				}
			}
			return n == total
		}) + sets
		close(stop)
		settle(2*time.Second, time.Minute)
		stopWatching()
		mgmt := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool { return r.Side == "management" && r.Namespace == ns })
		child := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool {
			return r.Side == "child" && strings.HasPrefix(r.Namespace, "ws-w")
		})
		p50, slowest, reacted := react.Figures()
		waitSum, waitCount := queueWait("workspacedeployment")
		meanWait := 0.0
		if waitCount > waitCount0 {
			meanWait = (waitSum - waitSum0) / float64(waitCount-waitCount0)
		}
		b.Logf("requests of %d workspaces: management %v; child %v", total, controllertest.Tally(mgmt), controllertest.Tally(child))

		// Baseline: the stand-in alone deploys the same number of ServiceSets.
		baseline := baselineServiceSets(b, ns, total, clusters)

		b.ReportMetric(sets.Seconds(), "s-to-servicesets")
		b.ReportMetric(running.Seconds(), "s-to-running")
		b.ReportMetric(baseline.Seconds(), "s-baseline-standin-only")
		b.ReportMetric(running.Seconds()/baseline.Seconds(), "running/baseline-ratio")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(len(mgmt))/float64(total), "mgmt-requests/workspace")
		b.ReportMetric(float64(len(child))/float64(total), "child-requests/workspace")
		b.ReportMetric(p50.Seconds(), "s-reaction-p50")
		b.ReportMetric(slowest.Seconds(), "s-reaction-max")
		b.ReportMetric(float64(reacted), "reactions-timed")
		b.ReportMetric(meanWait, "s-queue-wait-mean")
		b.ReportMetric(float64(peakDepth.Load()), "queue-depth-peak")
		_ = controllertest.Env.Client.Delete(ctx, class)
	}
}

func serviceTemplateB(b *testing.B, st *k0rdentv1beta1.ServiceTemplate) {
	b.Helper()
	st.Spec.Version = "1.0.0"
	st.Spec.Helm = &k0rdentv1beta1.HelmSpec{ChartSpec: controllertest.RawJSON(`{"chart":"workspace","interval":"10m","sourceRef":{"kind":"HelmRepository","name":"charts"}}`)}
	st.Status.Valid = true
	if err := standin.CreateWithStatus(context.Background(), controllertest.Env.Client, st); err != nil {
		b.Fatal(err)
	}
}

// baselineServiceSets creates ServiceSets directly and times the stand-in
// until all are deployed.
func baselineServiceSets(b *testing.B, ns string, total, clusters int) time.Duration {
	ctx := context.Background()
	for w := range total {
		ss := &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("base-%04d", w), Namespace: ns,
			Labels: map[string]string{"bench": "baseline"}}}
		ss.Spec.Cluster = fmt.Sprintf("c%02d", w%clusters)
		ss.Spec.Provider.Name = k0rdentv1beta1.DefaultStateManagementProviderName
		ss.Spec.Services = []k0rdentv1beta1.ServiceWithValues{{Name: fmt.Sprintf("base-%04d", w), Namespace: "default", Template: "tmpl"}}
		if err := controllertest.Env.Client.Create(ctx, ss); err != nil {
			b.Fatal(err)
		}
	}
	return world.WaitFor(b, 60*time.Minute, "baseline ServiceSets deployed", func() bool {
		list := &k0rdentv1beta1.ServiceSetList{}
		if controllertest.Env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"bench": "baseline"}) != nil {
			return false
		}
		n := 0
		for _, ss := range list.Items {
			if ss.Status.Deployed && len(ss.Status.Services) == 1 {
				n++
			}
		}
		return n == total
	})
}

func samplePeak(peak *atomic.Uint64, stop <-chan struct{}) {
	var m runtime.MemStats
	for {
		runtime.ReadMemStats(&m)
		if m.HeapAlloc > peak.Load() {
			peak.Store(m.HeapAlloc)
		}
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
