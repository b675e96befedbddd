// Package sandbox runs Apiary's whole job on one machine: an embedded
// management control plane with Apiary's and k0rdent's CRDs, the k0rdent
// stand-in with a child control plane holding GPU nodes, Apiary itself, and
// the exalsius quick start applied, with progress printed as it goes.
package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// Options configure a sandbox run.
type Options struct {
	// Assets holds the kube-apiserver and etcd binaries.
	Assets string
	// Dir receives the kubeconfig.
	Dir string
	// ExitWhenReady stops the sandbox once the quick start workspace runs,
	// for headless runs and tests.
	ExitWhenReady bool
	// Out receives the progress lines.
	Out io.Writer
	// Mode is the delivery mode: "direct" (default) or "git", which adds a
	// loopback Git server and Flux.
	Mode string
	// FluxBin holds Flux's controller binaries for Git mode (make
	// flux-controllers builds them).
	FluxBin string
	// Shards runs this many shard managers in the process, each with its
	// own Lease (docs/sharding.md); one manager without sharding when 0 or 1.
	Shards int
}

// Main runs the sandbox with command-line arguments and returns an exit code.
func Main(args []string) int {
	fset := flag.NewFlagSet("apiary sandbox", flag.ContinueOnError)
	opts := Options{Out: os.Stdout}
	fset.StringVar(&opts.Assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "Folder holding the kube-apiserver and etcd binaries (make testenv builds them).")
	fset.StringVar(&opts.Dir, "dir", ".sandbox", "Folder for the sandbox's kubeconfig.")
	fset.BoolVar(&opts.ExitWhenReady, "exit-when-ready", false, "Stop once the quick start workspace is Running (exit code 0), for headless runs.")
	fset.StringVar(&opts.Mode, "mode", "direct", "Delivery mode: direct (server-side apply) or git (a loopback Git server and Flux apply Apiary's commits).")
	fset.StringVar(&opts.FluxBin, "flux-bin", os.Getenv("APIARY_FLUX_BIN"), "Folder holding Flux's source-controller and kustomize-controller, for --mode=git (make flux-controllers builds them).")
	fset.IntVar(&opts.Shards, "shards", 1, "Run this many Apiary shards (docs/sharding.md), each a manager with its own Lease.")
	timeout := fset.Duration("timeout", 0, "Give up after this long (exit code 1); 0 runs until interrupted.")
	logs := fset.Bool("logs", false, "Print Apiary's logs.")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "apiary sandbox: unexpected argument %q\n", fset.Arg(0))
		return 2
	}
	logOut := io.Discard
	if *logs {
		logOut = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logOut)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	if err := Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "apiary sandbox: %v\n", err)
		return 1
	}
	return 0
}

// Run starts the sandbox and blocks until ctx ends (or, with ExitWhenReady,
// until the quick start workspace runs).
func Run(ctx context.Context, opts Options) error {
	if opts.Assets == "" {
		return errors.New("no control-plane binaries: pass --assets or set KUBEBUILDER_ASSETS (make run does)")
	}
	say := func(format string, args ...any) { fmt.Fprintf(opts.Out, "» "+format+"\n", args...) }
	crds, err := loadCRDs()
	if err != nil {
		return err
	}
	var fluxCRDs []string
	switch opts.Mode {
	case "", "direct":
	case "git":
		if fluxCRDs, err = testenv.FluxCRDDirs(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--mode must be direct or git, not %q", opts.Mode)
	}
	say("starting the management control plane (kube-apiserver + etcd)")
	mgmt := &envtest.Environment{BinaryAssetsDirectory: opts.Assets, CRDs: crds, CRDDirectoryPaths: fluxCRDs, ErrorIfCRDPathMissing: true}
	cfg, err := mgmt.Start()
	if err != nil {
		return fmt.Errorf("starting the management control plane: %w", err)
	}
	defer func() { _ = mgmt.Stop() }()
	say("starting a child control plane for the stand-in's clusters")
	child := &envtest.Environment{BinaryAssetsDirectory: opts.Assets}
	childCfg, err := child.Start()
	if err != nil {
		return fmt.Errorf("starting the child control plane: %w", err)
	}
	defer func() { _ = child.Stop() }()

	kubeconfig, err := adminKubeconfig(mgmt)
	if err != nil {
		return err
	}
	childKubeconfig, err := adminKubeconfig(child)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", opts.Dir, err)
	}
	kcPath, _ := filepath.Abs(filepath.Join(opts.Dir, "kubeconfig"))
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	childPath, _ := filepath.Abs(filepath.Join(opts.Dir, "child.kubeconfig"))
	if err := os.WriteFile(childPath, childKubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing child kubeconfig: %w", err)
	}
	say("management cluster ready; in another shell:\n    export KUBECONFIG=%s\n    kubectl get colonies,wsc,wsd -A\n  the child cluster: KUBECONFIG=%s", kcPath, childPath)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	standinDone, err := startStandIn(ctx, cfg, childKubeconfig)
	if err != nil {
		return err
	}
	var gitops *gitOps
	if opts.Mode == "git" {
		env, err := testenv.Wrap(mgmt)
		if err != nil {
			return err
		}
		for _, d := range []string{"git", "flux", "checkout"} {
			_ = os.RemoveAll(filepath.Join(opts.Dir, d)) // a fresh repository per run
		}
		if gitops, err = startGitOps(ctx, env, opts.Dir, opts.FluxBin, say); err != nil {
			return err
		}
		defer gitops.stop()
	}
	var gitOpts *manager.GitOptions
	if gitops != nil {
		gitOpts = gitops.opts
	}
	managers := max(opts.Shards, 1)
	managerDone := make(chan error, managers)
	for i := range managers {
		mo := manager.Options{
			Git: gitOpts,
			// A test runs the sandbox once per mode in one process, and
			// shards run side by side.
			SkipControllerNameValidation: true,
			RestConfig:                   cfg,
			MetricsBindAddress:           "0",
			HealthProbeBindAddress:       "0",
			Concurrency:                  manager.DefaultConcurrency,
			CRDCheckInterval:             time.Second,
			NoCrossNamespaceRefs:         true,
			Logger:                       ctrl.Log.WithName("apiary"),
		}
		if managers > 1 {
			mo.Shard = shard.Config{Index: i, Shards: managers}
			mo.LeaderElectionNamespace = metav1.NamespaceDefault
			mo.Logger = ctrl.Log.WithName("apiary").WithValues("shard", i)
		}
		go func() { managerDone <- manager.Run(ctx, mo) }()
	}
	if managers > 1 {
		say("%d Apiary shards run, each holding its Lease apiary-shard-<i> in namespace default", managers)
	}
	say("Apiary is running; applying the exalsius quick start (Ctrl-C stops everything)")
	if err := seed(ctx, cfg, childCfg); err != nil {
		return err
	}
	ready, err := watchProgress(ctx, cfg, opts.Out, opts.ExitWhenReady, gitops != nil)
	cancel()
	say("stopping")
	for range managers {
		if merr := <-managerDone; merr != nil && err == nil {
			err = merr
		}
	}
	<-standinDone
	if err != nil {
		return err
	}
	if opts.ExitWhenReady && !ready {
		return errors.New("the quick start did not become ready in time")
	}
	return nil
}

func adminKubeconfig(env *envtest.Environment) ([]byte, error) {
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, env.Config)
	if err != nil {
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	return user.KubeConfig()
}
