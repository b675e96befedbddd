package scale_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// floorWorkers are the floor's concurrent reconciles, Apiary's default for
// workspaces (manager.DefaultConcurrency).
const floorWorkers = 8

// floor is the least an operator can do for the job: for each workspace of
// its namespace, create the workspace's namespace on the child, create its
// ServiceSet (what k0rdent deploys), and patch the workspace's status to
// Running once the ServiceSet reports the release Deployed — three writes
// a workspace, no finalizer, no event, no condition, no admission, no
// adoption, no server-side apply. It reads through a cache (workspaces,
// ServiceSets, the class) as any controller does, and reaches each child
// through its ClusterDeployment's kubeconfig Secret, read once per cluster.
// It is the benchmark's yardstick, not a product: what Apiary costs beyond
// it is the price of what Apiary guarantees.
type floor struct {
	client client.Client
	reader client.Reader // uncached: the kubeconfig Secrets, once each

	mu       sync.Mutex
	children map[types.NamespacedName]client.Client
	// namespaced are the workspaces whose child namespace exists.
	namespaced map[types.UID]bool
}

// runFloor runs the floor against the workspaces of ns until ctx ends.
func runFloor(ctx context.Context, cfg *rest.Config, ns string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // as controller-runtime's ctrl.GetConfig, which the manager uses
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 apiaryscheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return fmt.Errorf("floor manager: %w", err)
	}
	f := &floor{client: mgr.GetClient(), reader: mgr.GetAPIReader(),
		children: map[types.NamespacedName]client.Client{}, namespaced: map[types.UID]bool{}}
	err = ctrl.NewControllerManagedBy(mgr).Named("floor-" + ns).
		For(&workspacesv1.WorkspaceDeployment{}).
		Owns(&k0rdentv1beta1.ServiceSet{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: floorWorkers}).
		Complete(f)
	if err != nil {
		return fmt.Errorf("floor controller: %w", err)
	}
	errs := make(chan error, 1)
	go func() { errs <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("floor: caches did not sync")
	}
	go func() {
		if err := <-errs; err != nil {
			fmt.Printf("floor: %v\n", err)
		}
	}()
	return nil
}

// Reconcile does the floor's three writes, each once.
func (f *floor) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ws := &workspacesv1.WorkspaceDeployment{}
	if err := f.client.Get(ctx, req.NamespacedName, ws); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ws.Status.Phase == workspacesv1.PhaseRunning || !ws.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	cd := types.NamespacedName{Namespace: ws.Spec.ClusterDeploymentRef.Namespace, Name: ws.Spec.ClusterDeploymentRef.Name}
	if cd.Namespace == "" {
		cd.Namespace = ws.Namespace
	}
	release := plan.ReleaseName(cd.Name, ws.Name)
	childNS := plan.ChildNamespace(ws.Name)
	if err := f.childNamespace(ctx, ws, cd, childNS); err != nil {
		return reconcile.Result{}, err
	}
	ss := &k0rdentv1beta1.ServiceSet{}
	err := f.client.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: plan.ServiceSetName(cd.Name, ws.Name)}, ss)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, f.createServiceSet(ctx, ws, cd, release, childNS)
	case err != nil:
		return reconcile.Result{}, err
	}
	for _, s := range ss.Status.Services {
		if s.Name == release && s.State == k0rdentv1beta1.ServiceStateDeployed {
			patch := client.MergeFrom(ws.DeepCopy())
			ws.Status.Phase = workspacesv1.PhaseRunning
			return reconcile.Result{}, f.client.Status().Patch(ctx, ws, patch)
		}
	}
	return reconcile.Result{}, nil // the ServiceSet's update brings the workspace back
}

// childNamespace creates the workspace's namespace on its child, once.
func (f *floor) childNamespace(ctx context.Context, ws *workspacesv1.WorkspaceDeployment, cd types.NamespacedName, name string) error {
	f.mu.Lock()
	done := f.namespaced[ws.UID]
	f.mu.Unlock()
	if done {
		return nil
	}
	child, err := f.child(ctx, cd)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{plan.WorkspaceLabel: ws.Name}}}
	if err := child.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s on %s: %w", name, cd, err)
	}
	f.mu.Lock()
	f.namespaced[ws.UID] = true
	f.mu.Unlock()
	return nil
}

// child is the client of a cluster, from its kubeconfig Secret.
func (f *floor) child(ctx context.Context, cd types.NamespacedName) (client.Client, error) {
	f.mu.Lock()
	c := f.children[cd]
	f.mu.Unlock()
	if c != nil {
		return c, nil
	}
	secret := &corev1.Secret{}
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: cd.Name + k0rdentv1beta1.KubeconfigSecretSuffix}, secret); err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", cd, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[k0rdentv1beta1.KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", cd, err)
	}
	cfg.QPS, cfg.Burst = 20, 40 // Apiary's per-child defaults (internal/childcluster)
	if c, err = client.New(cfg, client.Options{}); err != nil {
		return nil, fmt.Errorf("client of %s: %w", cd, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev := f.children[cd]; prev != nil {
		return prev, nil
	}
	f.children[cd] = c
	return c, nil
}

// createServiceSet creates the workspace's ServiceSet: one service, the
// class's template, released into the child namespace.
func (f *floor) createServiceSet(ctx context.Context, ws *workspacesv1.WorkspaceDeployment, cd types.NamespacedName, release, childNS string) error {
	template, err := f.templateOf(ctx, ws.Spec.WorkspaceClassRef)
	if err != nil {
		return err
	}
	ss := &k0rdentv1beta1.ServiceSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: cd.Namespace, Name: plan.ServiceSetName(cd.Name, ws.Name),
			Labels: map[string]string{plan.WorkspaceLabel: ws.Name}},
		Spec: k0rdentv1beta1.ServiceSetSpec{Cluster: cd.Name,
			Provider: k0rdentv1beta1.StateManagementProviderConfig{Name: k0rdentv1beta1.DefaultStateManagementProviderName},
			Services: []k0rdentv1beta1.ServiceWithValues{{Name: release, Namespace: childNS, Template: template}}},
	}
	if err := controllerutil.SetControllerReference(ws, ss, f.client.Scheme()); err != nil {
		return err
	}
	if err := f.client.Create(ctx, ss); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceSet %s: %w", ss.Name, err)
	}
	return nil
}

// templateOf is the ServiceTemplate of a class (from the cache).
func (f *floor) templateOf(ctx context.Context, class string) (string, error) {
	c := &workspacesv1.WorkspaceClass{}
	if err := f.client.Get(ctx, client.ObjectKey{Name: class}, c); err != nil {
		return "", fmt.Errorf("class %s: %w", class, err)
	}
	return c.Spec.ServiceTemplate.Name, nil
}

func ptrTo[T any](v T) *T { return &v }
