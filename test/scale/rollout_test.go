package scale_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// prepare creates a namespace of the management cluster with the
// templates, nclusters ready ClusterDeployments (c000, c001, …) and a
// WorkspaceClass, and returns the namespace and the class's name.
func prepare(b *testing.B, prefix string, nclusters int) (ns, class string) {
	b.Helper()
	ctx := context.Background()
	c := clusters.Management.Client
	ns = clusters.Management.NewNamespace(b, prefix)
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
	wc := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + ns},
		Spec: workspacesv1.WorkspaceClassSpec{DisplayName: prefix, ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: template, Namespace: ns}}}
	if os.Getenv("APIARY_SCALE_CLASS_RESOURCES") != "0" {
		// As a user's class does (the exalsius examples ask for CPU and
		// memory): the path a CPU-only workspace takes through the
		// feasibility verdict is then the one users' clusters see.
		wc.Spec.DefaultResources.PerReplica = &workspacesv1.PerReplicaResources{
			CPU: ptr.To(resource.MustParse("500m")), Memory: ptr.To(resource.MustParse("1Gi"))}
	}
	if err := c.Create(ctx, wc); err != nil {
		b.Fatal(err)
	}
	return ns, wc.Name
}

// createWorkspaces creates total workspaces <prefix>00000, … spread over
// the clusters. The prefix keeps their child namespaces (ws-<name>) apart
// from another run's on the one child control plane.
func createWorkspaces(b *testing.B, ns, class, prefix string, total, nclusters int) {
	b.Helper()
	c := clusters.Management.Client
	for w := range total {
		ws := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s%05d", prefix, w)},
			Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class,
				ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: fmt.Sprintf("c%03d", w%nclusters), Namespace: ns}}}
		if err := c.Create(context.Background(), ws); err != nil {
			b.Fatal(err)
		}
	}
}

// serverRun is one rollout as the API servers saw it: from the first
// create to every workspace Running (and what a settle after it added).
type serverRun struct {
	servers       []*server
	start         time.Time
	sets, running time.Duration
	before        []serverSample
	deltas        []serverDelta
	// profiled is the management API server's CPU profile being taken
	// (APIARY_SCALE_SERVER_PROFILE), nil when none is.
	profiled <-chan error
	profile  string
}

// startRun samples the servers; the rollout of the run name starts now.
// With APIARY_SCALE_SERVER_PROFILE=<prefix> it also takes a CPU profile of
// the management API server over the first APIARY_SCALE_SERVER_PROFILE_SECONDS
// (20) of the rollout, saved as <prefix>.<name>.pprof.
func startRun(b *testing.B, name string, servers []*server) *serverRun {
	b.Helper()
	r := &serverRun{servers: servers}
	for _, s := range servers {
		r.before = append(r.before, s.sample(b))
	}
	if prefix := os.Getenv("APIARY_SCALE_SERVER_PROFILE"); prefix != "" {
		r.profile = prefix + "." + name + ".pprof"
		r.profiled = servers[0].profile(envInt("APIARY_SCALE_SERVER_PROFILE_SECONDS", 20), r.profile)
	}
	r.start = time.Now()
	return r
}

// waitRollout waits until every ServiceSet exists, then until every
// workspace is Running, as the benchmark's watches (react) saw them.
func (r *serverRun) waitRollout(b *testing.B, react *managertest.Reactions, total int) {
	b.Helper()
	world.WaitFor(b, 60*time.Minute, "every ServiceSet exists", func() bool {
		sets, _ := react.Counts()
		return sets >= total
	})
	r.sets = time.Since(r.start) // from the first create
	world.WaitFor(b, 120*time.Minute, "every workspace Running", func() bool {
		_, running := react.Counts()
		return running >= total
	})
	r.running = time.Since(r.start)
}

// end samples the servers again and logs what each served per workspace.
// The benchmark's own two watches (workspaces and ServiceSets of the run's
// namespace) are in the figures, the same for every run.
func (r *serverRun) end(b *testing.B, name string, total int) {
	b.Helper()
	if r.profiled != nil {
		if err := <-r.profiled; err != nil {
			b.Logf("the API server's CPU profile: %v", err)
		} else {
			fmt.Printf("%s: the management API server's CPU profile: %s (go tool pprof -top %[2]s)\n", name, r.profile)
		}
	}
	for i, s := range r.servers {
		d := r.before[i].to(s.name, s.sample(b))
		d.report(b, name, total)
		r.deltas = append(r.deltas, d)
	}
}

// cpu is the CPU time of every kube-apiserver and etcd of the run.
func (r *serverRun) cpu() float64 {
	t := 0.0
	for _, d := range r.deltas {
		t += d.apiserverCPU + d.etcdCPU
	}
	return t
}

// requests are the requests every server counted.
func (r *serverRun) requests() float64 {
	t := 0.0
	for _, d := range r.deltas {
		t += d.total()
	}
	return t
}

// reportMetrics reports the run's time and the servers' figures.
func (r *serverRun) reportMetrics(b *testing.B, total int) {
	b.Helper()
	b.ReportMetric(r.sets.Seconds(), "s-to-servicesets")
	b.ReportMetric(r.running.Seconds(), "s-to-running")
	for _, d := range r.deltas {
		b.ReportMetric(d.total()/float64(total), d.name+"-server-requests/workspace")
		b.ReportMetric((d.of("WATCH ")+sumOf(mapValues(d.openWatches)))/float64(total), d.name+"-server-watches/workspace")
		b.ReportMetric(sumOf(mapValues(d.watchEvents))/float64(total), d.name+"-watch-events/workspace")
		b.ReportMetric(d.apiserverCPU, d.name+"-apiserver-CPU-s")
		b.ReportMetric(d.etcdCPU, d.name+"-etcd-CPU-s")
	}
	b.ReportMetric(r.cpu(), "server-CPU-s")
}

// against reports the run's figures over the floor's, when it ran.
func (r *serverRun) against(b *testing.B, floor *serverRun) {
	b.Helper()
	if floor == nil || floor.running == 0 {
		return
	}
	b.ReportMetric(r.running.Seconds()/floor.running.Seconds(), "x-floor-time")
	if floor.cpu() > 0 {
		b.ReportMetric(r.cpu()/floor.cpu(), "x-floor-server-CPU")
	}
	if floor.requests() > 0 {
		b.ReportMetric(r.requests()/floor.requests(), "x-floor-server-requests")
	}
	b.Logf("apiary/floor: time to Running %.1f s / %.1f s = %.2f (target ≤ 1.5); API servers' CPU %.1f s / %.1f s; requests %.0f / %.0f",
		r.running.Seconds(), floor.running.Seconds(), r.running.Seconds()/floor.running.Seconds(), r.cpu(), floor.cpu(), r.requests(), floor.requests())
}

// benchFloor is one run of the floor (floor_test.go): its own namespace,
// clusters and workspaces (f00000, …), removed again at the end so that
// Apiary's manager, started next, has nothing of it to reconcile.
func benchFloor(b *testing.B, servers []*server, total, nclusters int) *serverRun {
	b.Helper()
	ns, class := prepare(b, "floor", nclusters)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := runFloor(ctx, clusters.Management.Config, ns); err != nil {
		b.Fatal(err)
	}
	// The same watcher as Apiary's run has, so that the servers serve both
	// the same.
	react, err := managertest.WatchReactions(ctx, clusters.Management.Config, ns)
	if err != nil {
		b.Fatal(err)
	}
	run := startRun(b, "floor", servers)
	createWorkspaces(b, ns, class, "f", total, nclusters)
	run.waitRollout(b, react, total)
	time.Sleep(3 * time.Second) // as Apiary's run settles
	run.end(b, "floor", total)
	stop()
	p50, slowest, _ := react.Figures()
	run.reportMetrics(b, total)
	b.ReportMetric(p50.Seconds(), "s-reaction-p50")
	b.ReportMetric(slowest.Seconds(), "s-reaction-max")
	// Logged as well: a failure while removing would drop the result line.
	b.Logf("floor: %d workspaces, ServiceSets in %.1f s, Running in %.1f s, API servers' CPU %.1f s",
		total, run.sets.Seconds(), run.running.Seconds(), run.cpu())
	removeFloor(b, ns, class)
	return run
}

// removeFloor deletes the floor's workspaces, ServiceSets, clusters and
// class (the control plane runs no garbage collector), and waits until the
// stand-in let the ServiceSets and clusters go.
func removeFloor(b *testing.B, ns, class string) {
	b.Helper()
	ctx, c := context.Background(), clusters.Management.Client
	for _, obj := range []client.Object{&workspacesv1.WorkspaceDeployment{}, &k0rdentv1beta1.ServiceSet{}, &k0rdentv1beta1.ClusterDeployment{}} {
		// A collection of 10,000 outlasts the server's request timeout (a
		// timeout, or the stream reset); the server goes on deleting, and a
		// repeat deletes what is left.
		err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns))
		for tries := 0; err != nil && tries < 10; tries++ {
			time.Sleep(5 * time.Second)
			err = c.DeleteAllOf(ctx, obj, client.InNamespace(ns))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Delete(ctx, &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: class}}); err != nil {
		b.Fatal(err)
	}
	world.WaitFor(b, 10*time.Minute, "the floor's objects gone", func() bool {
		for _, list := range []client.ObjectList{&workspacesv1.WorkspaceDeploymentList{}, &k0rdentv1beta1.ServiceSetList{}, &k0rdentv1beta1.ClusterDeploymentList{}} {
			if c.List(ctx, list, client.InNamespace(ns)) != nil || apimeta.LenList(list) > 0 {
				return false
			}
		}
		return true
	})
}

func mapValues(m map[string]float64) []float64 {
	out := make([]float64, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
