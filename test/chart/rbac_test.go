package chart

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/examples"
	"github.com/apiaryhq/apiary/internal/manager"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestManagerRunsWithChartRBAC installs the chart's RBAC into a real API
// server and runs Apiary's manager as the chart's ServiceAccount (by
// impersonation) through the exalsius quick start; k0rdent's stand-in runs
// beside it as an administrator. A second run with one permission removed
// proves the first would fail if the chart lacked a rule.
func TestManagerRunsWithChartRBAC(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	child, err := testenv.Start(testenv.Bare())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = child.Stop() }()
	childKubeconfig, err := child.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	for _, n := range []string{"gpu-h100-a", "gpu-h100-b"} {
		g.Expect(standin.AddGPUNode(ctx, child.Client, n, map[string]string{"exalsius.ai/gpu-model": "H100-80GB"}, "nvidia.com/gpu", 8)).To(Succeed())
	}
	standinDone := startStandIn(t, ctx, childKubeconfig)
	defer func() { cancel(); <-standinDone }()

	t.Run("chart RBAC runs the quick start", func(t *testing.T) {
		g := NewWithT(t)
		user := installRBAC(t, "apiary", "apiary-system", nil)
		logs := startManager(t, user, "apiary-system")
		q := seedQuickstart(t, "kcm-system", "")

		g.Eventually(func(g Gomega) {
			colony := &infrav1.Colony{}
			g.Expect(env.Client.Get(ctx, q.colony, colony)).To(Succeed())
			g.Expect(apimeta.IsStatusConditionTrue(colony.Status.Conditions, "Ready")).To(BeTrue(), "Colony %s: %v", q.colony, colony.Status.Conditions)
			wsd := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(ctx, q.workspace, wsd)).To(Succeed())
			g.Expect(wsd.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "WorkspaceDeployment %s: %s", q.workspace, wsd.Status.Message)
		}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), logs.forbidden)
		g.Expect(logs.forbidden()).To(BeEmpty(), "the manager was refused a request")
	})

	t.Run("a missing rule stops the workspace", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t, "apiary-broken")
		user := installRBAC(t, "apiary-broken", ns, func(resource string) bool { return resource == "servicesets" })
		// controller-runtime allows each controller name once per process, so
		// this second manager runs in a process of its own.
		logs := startManagerProcess(t, user, ns)
		q := seedQuickstart(t, env.NewNamespace(t, "kcm-broken"), "-broken")

		// The manager is refused ServiceSets; the controllers' caches never
		// sync, so neither the Colony nor the workspace gets anywhere.
		g.Eventually(logs.forbidden).WithTimeout(time.Minute).Should(ContainSubstring("servicesets"))
		g.Consistently(func(g Gomega) {
			wsd := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(ctx, q.workspace, wsd)).To(Succeed())
			g.Expect(wsd.Status.Phase).NotTo(Equal(workspacesv1.PhaseRunning))
			colony := &infrav1.Colony{}
			g.Expect(env.Client.Get(ctx, q.colony, colony)).To(Succeed())
			g.Expect(apimeta.IsStatusConditionTrue(colony.Status.Conditions, "Ready")).To(BeFalse())
		}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
}

// installRBAC renders the chart as release name in namespace ns, creates its
// ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding, and
// returns a config that impersonates the ServiceAccount. drop removes
// resources from the ClusterRole's rules, to prove a missing rule is noticed.
func installRBAC(t *testing.T, name, ns string, drop func(resource string) bool) *rest.Config {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	objs, err := render(loadChart(t), name, ns, nil)
	g.Expect(err).NotTo(HaveOccurred())
	sa := ""
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if o.GetKind() == "ServiceAccount" {
			sa = o.GetName()
		}
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-manager") && drop != nil {
			dropResources(t, o, drop)
		}
		g.Expect(env.Client.Create(ctx, o)).To(Succeed(), "creating %s %s", o.GetKind(), o.GetName())
		obj := o
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	g.Expect(sa).NotTo(BeEmpty())
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return cfg
}

// dropResources removes resources from a rendered ClusterRole's rules.
func dropResources(t *testing.T, role *unstructured.Unstructured, drop func(string) bool) {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var kept []any
	dropped := 0
	for _, r := range rules {
		rule := r.(map[string]any)
		var res []any
		for _, name := range rule["resources"].([]any) {
			if drop(name.(string)) {
				dropped++
				continue
			}
			res = append(res, name)
		}
		if len(res) > 0 {
			rule["resources"] = res
			kept = append(kept, rule)
		}
	}
	if dropped == 0 {
		t.Fatalf("no resource to drop in ClusterRole %s", role.GetName())
	}
	if err := unstructured.SetNestedSlice(role.Object, kept, "rules"); err != nil {
		t.Fatalf("setting rules: %v", err)
	}
}

// startManager runs Apiary's manager with cfg until the test ends and
// returns its logs.
func startManager(t *testing.T, cfg *rest.Config, leaseNamespace string) *logBuffer {
	t.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, managerOptions(cfg, leaseNamespace, zap.New(zap.WriteTo(logs))))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("manager stopped: %v", err)
		}
		if t.Failed() {
			t.Logf("manager log (last lines):\n%s", logs.tail(60))
		}
	})
	return logs
}

// startStandIn runs the k0rdent stand-in as an administrator, as k0rdent
// would run beside Apiary.
func startStandIn(t *testing.T, ctx context.Context, childKubeconfig []byte) <-chan struct{} {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: apiaryscheme.New(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatalf("creating the stand-in's manager: %v", err)
	}
	sets := &standin.ServiceSets{}
	if err := sets.SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up the ServiceSet stand-in: %v", err)
	}
	if err := (&standin.StandIn{ChildKubeconfig: childKubeconfig, Services: sets}).SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up the ClusterDeployment stand-in: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return done
}

// quickstart names the objects of one quick-start run.
type quickstart struct {
	colony, workspace client.ObjectKey
}

// seedQuickstart creates what k0rdent and an administrator would have
// installed in ns, then applies examples/quickstart. Outside kcm-system the
// objects move to ns and the (cluster-scoped) WorkspaceClass takes suffix.
func seedQuickstart(t *testing.T, ns, suffix string) quickstart {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "exalsius-remote-cluster-0-1-5", true),
		standin.NewCredential(ns, "remote-cred", true),
		standin.NewServiceTemplate(ns, "jupyter-notebook-0-3-0", true, nil),
	} {
		g.Expect(standin.CreateWithStatus(ctx, env.Client, obj)).To(Succeed(), "creating %T", obj)
	}
	q := quickstart{}
	for _, file := range []string{"quickstart/colony.yaml", "quickstart/workspaceclass.yaml", "quickstart/notebook-password.yaml", "quickstart/workspacedeployment.yaml"} {
		data, err := fs.ReadFile(examples.Quickstart, file)
		g.Expect(err).NotTo(HaveOccurred())
		objs, err := testenv.DecodeObjects(data)
		g.Expect(err).NotTo(HaveOccurred(), file)
		for _, o := range objs {
			switch o.GetKind() {
			case "Colony":
				o.SetNamespace(ns)
				q.colony = client.ObjectKeyFromObject(o)
			case "Secret":
				o.SetNamespace(ns)
			case "WorkspaceClass":
				o.SetName(o.GetName() + suffix)
				g.Expect(unstructured.SetNestedField(o.Object, ns, "spec", "serviceTemplate", "namespace")).To(Succeed())
			case "WorkspaceDeployment":
				o.SetNamespace(ns)
				ref, _, _ := unstructured.NestedString(o.Object, "spec", "workspaceClassRef")
				g.Expect(unstructured.SetNestedField(o.Object, ref+suffix, "spec", "workspaceClassRef")).To(Succeed())
				g.Expect(unstructured.SetNestedField(o.Object, ns, "spec", "clusterDeploymentRef", "namespace")).To(Succeed())
				q.workspace = client.ObjectKeyFromObject(o)
			}
			g.Expect(env.Client.Create(ctx, o)).To(Succeed(), "applying examples/%s", file)
			obj := o
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		}
	}
	return q
}

// logBuffer collects the manager's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// forbidden returns the log lines that report a refused request.
func (b *logBuffer) forbidden() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "forbidden") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// tail returns the last n log lines.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(b.buf.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
