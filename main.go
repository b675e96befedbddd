// Command apiary runs the Apiary controller manager. `apiary sandbox` runs it
// against an embedded local control plane (only in a binary built with
// `-tags sandbox`, as `make build` does); `apiary render` prints offline what
// Apiary would deliver; `apiary version` prints the version it was built as;
// `apiary uninstall` releases the finalizers and annotations only Apiary
// releases, once it is scaled down for good (docs/migration.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/kubeconfig"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/offline"
	"github.com/apiaryhq/apiary/internal/queueview"
	"github.com/apiaryhq/apiary/internal/uninstall"
	"github.com/apiaryhq/apiary/internal/usagereport"
	"github.com/apiaryhq/apiary/internal/version"
	"github.com/apiaryhq/apiary/internal/workspace/activity"
)

// DefaultAdoptFieldManager is the exalsius operator's field manager: the
// name of its binary, which controller-runtime uses when a client sets none.
const DefaultAdoptFieldManager = "manager"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// commands are apiary's subcommands; without one it runs the manager.
var commands = []struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}{
	{"sandbox", "run Apiary against an embedded local control plane (make run)", func(a []string, _, _ io.Writer) int { return sandboxMain(a) }},
	{"render", "print, without a cluster, the objects Apiary would deliver for manifests", offline.Main},
	{"version", "print the version Apiary was built as", version.Main},
	{"uninstall", "release the finalizers only Apiary releases, once it is scaled down for good", uninstall.Main},
	{"usage", "print each tenant's GPU, CPU and memory hours over a window of days", usagereport.Main},
	{"queue", "print where a namespace's waiting workspaces stand in their queues", queueview.Main},
}

// usage prints how apiary is called.
func usage(out io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(out, "Usage: apiary [flags]          run the controller manager against the current kubeconfig")
	fmt.Fprintln(out, "       apiary COMMAND [flags]  where COMMAND is one of:")
	for _, c := range commands {
		fmt.Fprintf(out, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(out, "  help       print this help")
	fmt.Fprintln(out, "`apiary COMMAND --help` lists a command's flags. The manager's flags:")
	fs.SetOutput(out)
	fs.PrintDefaults()
}

// run runs apiary with its arguments and returns the exit code: a
// subcommand, or the manager. An unknown command or a stray argument is an
// error (2) before anything starts: a typo must never start a second,
// unelected manager against whatever cluster the kubeconfig names.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apiary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr, fs) }
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		for _, c := range commands {
			if c.name == args[0] {
				return c.run(args[1:], stdout, stderr)
			}
		}
		if args[0] == "help" {
			bindManagerFlags(fs)
			usage(stdout, fs)
			return 0
		}
		fmt.Fprintf(stderr, "apiary: unknown command %q; `apiary help` lists the commands\n", args[0])
		return 2
	}
	start := bindManagerFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "apiary: unexpected argument %q; `apiary help` lists the commands\n", fs.Arg(0))
		return 2
	}
	return start()
}

// bindManagerFlags binds the manager's flags to fs and returns what starts
// the manager once they are parsed.
func bindManagerFlags(fs *flag.FlagSet) (start func() int) {
	opts := manager.Options{Concurrency: manager.DefaultConcurrency}
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8080",
		"The address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", false,
		"Serve the metrics over HTTPS to clients with a bearer token the API server accepts whose subject may get the "+
			"non-resource URL /metrics; otherwise plain HTTP to anyone who reaches the port.")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "",
		"A folder holding tls.crt and tls.key for --metrics-secure; a self-signed certificate when empty.")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081",
		"The address the /healthz and /readyz probes bind to.")
	fs.StringVar(&opts.QueueBindAddress, "queue-bind-address", "0",
		"The address waiting workspaces' queue positions are served on, over HTTPS, to callers whose bearer token the API server "+
			"accepts and whose subject may list the namespace's WorkspaceDeployments (apiary queue); 0 disables it.")
	fs.StringVar(&opts.QueueCertDir, "queue-cert-dir", "",
		"A folder holding tls.crt and tls.key for the queue positions server; a self-signed certificate when empty.")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "0",
		"The address Go's profiles are served on, at /debug/pprof/ (\"0\" disables them). For investigations only: never expose it.")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false,
		"Enable leader election, so that only one replica is active at a time.")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", "apiary.infra.exalsius.ai",
		"The name of the leader-election lease.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "",
		"The namespace of the leader-election lease; the manager's namespace when empty.")
	fs.DurationVar(&opts.LeaderElectionLeaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a leader-election Lease lasts without renewal; the leader renews it within two thirds of that, "+
			"and a replica that loses it stops. A killed leader's work resumes after at most this long.")
	fs.IntVar(&opts.Shard.Shards, "shards", 1,
		"The number of shards that split the work (docs/sharding.md); 1 turns sharding off. With more, leader election is on "+
			"and each shard holds the Lease apiary-shard-<index> in --leader-election-namespace.")
	fs.IntVar(&opts.Shard.Index, "shard", 0,
		"This replica's shard, from 0 to --shards - 1.")
	fs.IntVar(&opts.Concurrency.Colony, "colony-concurrency", opts.Concurrency.Colony,
		"The number of Colony workers.")
	fs.IntVar(&opts.Concurrency.WorkspaceClass, "workspaceclass-concurrency", opts.Concurrency.WorkspaceClass,
		"The number of WorkspaceClass workers.")
	fs.IntVar(&opts.Concurrency.WorkspaceDeployment, "workspacedeployment-concurrency", opts.Concurrency.WorkspaceDeployment,
		"The number of WorkspaceDeployment workers.")
	fs.IntVar(&opts.Concurrency.TenantQuota, "tenantquota-concurrency", opts.Concurrency.TenantQuota,
		"The number of TenantQuota workers.")
	fs.Func("gpu-queueing-policy", "How workspaces waiting for GPUs on a cluster are served: StrictFIFO (default; no workspace "+
		"overtakes an older one that waits for a node it could use) or BestEffortFIFO (a younger one that fits goes ahead).",
		func(v string) error {
			opts.GPUQueueing = admission.Policy(v)
			return opts.GPUQueueing.Validate()
		})
	fs.Func("preemption-requeue", "Where a workspace preempted by one of a higher priority queues again: Eviction (default; "+
		"from the time it was preempted) or Creation (the place it held before).",
		func(v string) error {
			opts.PreemptionRequeue = workspacesv1.RequeueTimestamp(v)
			return manager.ValidateRequeue(opts.PreemptionRequeue)
		})
	fs.DurationVar(&opts.CRDCheckInterval, "crd-check-interval", 0,
		"How often to look for k0rdent's CRDs while they are missing (default 10s).")
	fs.StringVar(&opts.BundleDir, "bundle-dir", "",
		"A folder of template bundles, one per subfolder, that add to or replace the built-in ones.")
	fs.DurationVar(&opts.InventoryInterval, "gpu-inventory-interval", 0,
		"How often Colonies resync their GPU inventory besides reacting to node changes (default 5m).")
	fs.BoolVar(&opts.NoCrossNamespaceRefs, "no-cross-namespace-refs", true,
		"Refuse workspaces that target a ClusterDeployment in another namespace.")
	fs.DurationVar(&opts.PrerequisiteGracePeriod, "prerequisite-grace-period", 0,
		"How long a shared prerequisite that no workspace of its cluster needs any more is kept before it is removed; "+
			"0 (the default) keeps it forever.")
	fs.StringVar(&opts.ValuesFromServiceAccount, "values-from-service-account", "",
		"Read workspaces' valuesFrom Secrets and ConfigMaps as this ServiceAccount of the workspace's namespace "+
			"(impersonation); empty reads them with the manager's own rights.")
	fs.StringVar(&opts.WorkspaceGatewayName, "workspace-gateway-name", "istio-ingressgateway",
		"The tenant Gateway on regional clusters that workspace access routes attach to.")
	fs.StringVar(&opts.WorkspaceGatewayNamespace, "workspace-gateway-namespace", "istio-system",
		"The namespace of the tenant Gateway on regional clusters.")
	opts.WorkspaceMeshMode = string(mesh.Ambient)
	fs.Func("workspace-mesh-mode", "How workspace namespaces join the Istio mesh: ambient (default; istio.io/dataplane-mode=ambient), "+
		"sidecar (istio-injection=enabled) or none (no label).",
		func(v string) error {
			_, err := mesh.ParseMode(v)
			opts.WorkspaceMeshMode = v
			return err
		})
	fs.BoolVar(&opts.WorkspaceWaypointEnabled, "workspace-waypoint-enabled", true,
		"In ambient mode, route each child cluster's workspaces through its waypoint Gateway <cluster>-waypoint, "+
			"which must exist and be programmed on the regional and the child cluster.")
	fs.StringVar(&opts.WorkspaceWaypointNamespace, "workspace-waypoint-namespace", mesh.DefaultWaypointNamespace,
		"The namespace of the <cluster>-waypoint Gateways on regional and child clusters.")
	opts.AdoptFieldManagers = []string{DefaultAdoptFieldManager}
	fs.Func("adopt-field-managers", "Comma-separated field managers of client-side writers (Create and Update) whose fields "+
		"Apiary takes over the first time it applies an object it did not create, so that fields it stops rendering are "+
		"removed; default \""+DefaultAdoptFieldManager+"\", the exalsius operator's; empty disables it.",
		func(v string) error {
			opts.AdoptFieldManagers = splitList(v)
			return nil
		})
	fs.BoolVar(&opts.ChildServerHTTPSOnly, "child-server-https-only", false,
		"Refuse child-cluster kubeconfigs whose server is plain http.")
	fs.Func("child-server-allow", "Comma-separated host names (*.domain for any name under it), IP addresses and CIDRs "+
		"that child-cluster kubeconfigs' servers must match; names are not resolved, and with CIDRs every connection to a "+
		"child must reach an address in them. Empty (the default) allows any server.",
		func(v string) error {
			opts.ChildServerAllow = splitList(v)
			_, err := kubeconfig.ParseServerPolicy(false, opts.ChildServerAllow)
			return err
		})
	fs.StringVar(&opts.ActivityPrometheusURL, "activity-prometheus-url", "",
		"The Prometheus HTTP API (e.g. http://prometheus.monitoring:9090) that idle policies with a prometheus source "+
			"ask for the GPU utilisation of a workspace's namespace (DCGM exporter's DCGM_FI_DEV_GPU_UTIL). Empty: such "+
			"workspaces' activity is unknown, and they are never culled.")
	fs.StringVar(&opts.ActivityPrometheusMetric, "activity-prometheus-metric", activity.DefaultGPUMetric,
		"The GPU utilisation metric the prometheus source reads, in percent; DCGM's profiling metrics ("+activity.RatioMetricPrefix+"*, "+
			"e.g. DCGM_FI_PROF_GR_ENGINE_ACTIVE, which MIG devices report where DCGM_FI_DEV_GPU_UTIL does not) are ratios, read ×100.")
	fs.StringVar(&opts.ActivityPrometheusNamespaceLabel, "activity-prometheus-namespace-label", "",
		"The metric's label naming the workspace's namespace. Empty: "+activity.DefaultNamespaceLabel+" or "+activity.ExportedNamespaceLabel+
			" (what a scrape with honor_labels: false renames it to), so either scrape setting works.")
	fs.IntVar(&opts.ActivityProbeConcurrency, "activity-probe-concurrency", 8,
		"The most activity probes of idle policies in flight at once.")
	fs.DurationVar(&opts.ActivityProbeTimeout, "activity-probe-timeout", 5*time.Second,
		"How long one activity probe of an idle policy may take; a probe that takes longer reads unknown.")
	var git gitFlags
	git.bind(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	// controller-runtime's --kubeconfig lives on the global flag set, where
	// ctrl.GetConfig reads it: the same value is bound here.
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil {
		fs.Var(f.Value, f.Name, f.Usage)
	}
	return func() int {
		opts.Logger = zap.New(zap.UseFlagOptions(&zapOpts))
		ctrl.SetLogger(opts.Logger)
		cfg, err := ctrl.GetConfig()
		if err != nil {
			fmt.Fprintf(os.Stderr, "apiary: loading kubeconfig: %v\n", err)
			return 1
		}
		opts.RestConfig = cfg
		if opts.Git, opts.TenantGit, err = git.options(); err != nil {
			fmt.Fprintf(os.Stderr, "apiary: %v\n", err)
			return 2
		}
		if err := manager.Run(ctrl.SetupSignalHandler(), opts); err != nil {
			opts.Logger.Error(err, "manager stopped")
			return 1
		}
		return 0
	}
}
