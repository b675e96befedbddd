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

	"github.com/apiaryhq/apiary/test/managertest"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkScale runs two sub-benchmarks against the same world, each in
// namespaces and on clusters of its own: floor, a minimal controller of the
// benchmark's own (floor_test.go) doing only the three writes the job needs,
// then apiary, Apiary's manager as its own process. Both report the time to
// every workspace Running and what the API servers served (server_test.go):
// their requests by verb and resource, watches included, the time spent
// serving them, the watch events sent, and the CPU time of the
// kube-apiserver and etcd processes of both control planes; apiary also
// reports its figures over the floor's (x-floor-*), the target
// being x-floor-time ≤ 1.5. `-bench Scale/apiary` runs Apiary alone.
//
// The apiary sub-benchmark creates APIARY_SCALE_CLUSTERS ready
// ClusterDeployments (50) and starts the manager as its own process, then creates
// APIARY_SCALE_WORKSPACES workspaces (1,000) spread over the clusters, and
// reports the time until every ServiceSet exists and every workspace is
// Running, the manager's requests per workspace to the management and the
// child cluster, its workspace reconciles per workspace, the
// Deployed-to-Running reaction, the manager's peak RSS
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
	servers := []*server{newServer(b, "management", clusters.Management.Config), newServer(b, "child", clusters.Child.Config)}
	var base *serverRun // the floor's figures, when it ran
	b.Run("floor", func(b *testing.B) {
		for range b.N {
			base = benchFloor(b, servers, total, nclusters)
		}
	})
	b.Run("apiary", func(b *testing.B) {
		for range b.N {
			benchApiary(b, servers, total, nclusters, base)
		}
	})
}

// benchApiary is one run of Apiary's manager (see BenchmarkScale).
func benchApiary(b *testing.B, servers []*server, total, nclusters int, base *serverRun) {
	ctx := context.Background()
	ns, class := prepare(b, "scale", nclusters)
	if os.Getenv("APIARY_SCALE_QUOTA") != "" {
		tenantQuota(b, ns)
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
	before, reconcilesBefore := ms.requests(b), ms.reconciles(b)
	idleRSS, idleAnon := ms.sum(func(m *manager) int64 { return m.rss("VmRSS") }), ms.sum(func(m *manager) int64 { return m.rss("RssAnon") })
	watchCtx, stopWatching := context.WithCancel(ctx)
	react, err := managertest.WatchReactions(watchCtx, clusters.Management.Config, ns)
	if err != nil {
		b.Fatal(err)
	}
	run := startRun(b, "apiary", servers)
	cpuBefore := ms.cpuSeconds()
	createWorkspaces(b, ns, class, "w", total, nclusters)
	run.waitRollout(b, react, total)
	ms.settle(b, 3*time.Second, 5*time.Minute, rate)
	stopWatching()
	run.end(b, "apiary", total)
	after, reconciles := ms.requests(b), ms.reconciles(b)-reconcilesBefore
	// The shards' Lease renewals, at the rate measured while idle, are
	// not the workspaces' requests.
	leases := rate * time.Since(run.start).Seconds()
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
	run.reportMetrics(b, total)
	run.against(b, base)
	b.ReportMetric((after[mgmtHost]-before[mgmtHost]-leases)/float64(total), "mgmt-requests/workspace")
	b.ReportMetric((after[childHost]-before[childHost])/float64(total), "child-requests/workspace")
	b.ReportMetric(reconciles/float64(total), "reconciles/workspace")
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
