package manager

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// Like a fresh management cluster: Apiary's CRDs, but not k0rdent's yet.
	world.Main(m, world.World{Name: "manager", Management: true, ManagementOptions: []testenv.Option{testenv.WithoutK0rdentCRDs()}},
		func(r *world.Running) error { env = r.Management; return nil })
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestManagerWaitsForK0rdentCRDs starts the manager on a control plane without
// k0rdent's CRDs: it stays up and ready, holds back the controllers that need
// them, and starts those controllers once the CRDs are installed.
func TestManagerWaitsForK0rdentCRDs(t *testing.T) {
	g := NewWithT(t)
	var reconciled atomic.Int32
	probe := freeAddress(t)
	opts := Options{
		RestConfig:             env.Config,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: probe,
		Concurrency:            DefaultConcurrency,
		CRDCheckInterval:       200 * time.Millisecond,
		Logger:                 zap.New(zap.WriteTo(io.Discard)),
		controllers: []controllerSetup{{
			name:     "probe",
			requires: []schema.GroupVersionKind{k0rdentv1beta1.GroupVersion.WithKind("ClusterDeployment")},
			setup: func(mgr ctrl.Manager) error {
				return ctrl.NewControllerManagedBy(mgr).
					Named("probe").
					For(&k0rdentv1beta1.ClusterDeployment{}).
					Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
						reconciled.Add(1)
						return reconcile.Result{}, nil
					}))
			},
		}},
	}
	mgr, gates, err := New(opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gates).To(HaveLen(1))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done, 30*time.Second).Should(Receive(BeNil()), "the manager stops cleanly")
	}()

	g.Eventually(func() (int, error) {
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK), "/readyz answers once caches sync")
	g.Consistently(gates[0].Open, time.Second, 100*time.Millisecond).Should(BeFalse(),
		"controllers that need k0rdent's CRDs wait for them")
	g.Expect(done).NotTo(Receive(), "the manager keeps running without k0rdent's CRDs")

	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(), "test", "crds", "k0rdent")},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(gates[0].Open, 30*time.Second, 100*time.Millisecond).Should(BeTrue())

	ns := env.NewNamespace(t, "gate")
	cd := &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: ns}}
	cd.Spec.Template = "tmpl"
	g.Expect(env.Client.Create(context.Background(), cd)).To(Succeed())
	g.Eventually(reconciled.Load, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0),
		"a controller registered after start reconciles")
}

func TestNewRefusesBadChildServers(t *testing.T) {
	g := NewWithT(t)
	_, _, err := New(Options{RestConfig: env.Config, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		ChildServerAllow: []string{"https://api.example.com"}, Logger: zap.New(zap.WriteTo(io.Discard))})
	g.Expect(err).To(MatchError(ContainSubstring(`allowed server "https://api.example.com"`)))
}
