package chart

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/go-logr/logr"
)

const (
	// managerKubeconfigEnv makes the test binary run only Apiary's manager
	// with this kubeconfig.
	managerKubeconfigEnv = "APIARY_CHART_TEST_MANAGER_KUBECONFIG"
	// managerLeaseNamespaceEnv is the namespace of that manager's lease.
	managerLeaseNamespaceEnv = "APIARY_CHART_TEST_MANAGER_LEASE_NAMESPACE"
)

// startManagerProcess runs Apiary's manager in a child process (this test
// binary, re-executed) that authenticates as the admin and impersonates the
// user of cfg, until the test ends, and returns its logs.
func startManagerProcess(t *testing.T, cfg *rest.Config, leaseNamespace string) *logBuffer {
	t.Helper()
	admin, err := env.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(admin)
	if err != nil {
		t.Fatalf("loading the admin kubeconfig: %v", err)
	}
	for _, u := range kc.AuthInfos {
		u.Impersonate = cfg.Impersonate.UserName
		u.ImpersonateGroups = cfg.Impersonate.Groups
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	logs := &logBuffer{}
	p := &world.Process{Binary: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{managerKubeconfigEnv + "=" + path, managerLeaseNamespaceEnv + "=" + leaseNamespace},
		LogPath: filepath.Join(t.TempDir(), "manager.log"),
		OnLine: func(line string) bool {
			_, _ = logs.Write([]byte(line + "\n"))
			return true
		}}
	if err := p.Start(); err != nil {
		t.Fatalf("starting the manager process: %v", err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("manager log (last lines):\n%s", logs.tail(60))
		}
	})
	return logs
}

// runManagerProcess runs Apiary's manager as main.go does, with the given
// kubeconfig, until SIGTERM; it returns the exit code.
func runManagerProcess(kubeconfig, leaseNamespace string) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loading kubeconfig: %v\n", err)
		return 1
	}
	log := zap.New(zap.WriteTo(os.Stderr))
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := manager.Run(ctx, managerOptions(cfg, leaseNamespace, log)); err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	return 0
}

// managerOptions are the options of the chart's manager, in this process
// or re-executed: the chart's RBAC with leader election, as installed.
func managerOptions(cfg *rest.Config, leaseNamespace string, log logr.Logger) manager.Options {
	return manager.Options{
		RestConfig:              cfg,
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  "0",
		Concurrency:             manager.DefaultConcurrency,
		CRDCheckInterval:        time.Second,
		NoCrossNamespaceRefs:    true,
		LeaderElection:          true,
		LeaderElectionNamespace: leaseNamespace,
		LeaderElectionID:        "apiary-test",
		Logger:                  log,
	}
}
