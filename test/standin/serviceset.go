package standin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Test knobs set as annotations on a ServiceTemplate (tests cannot annotate
// the ServiceSets that the code under test renders). AnnotationFail and
// AnnotationDelay work on ServiceTemplates too: the first makes every service
// of the template Failed with the annotation's value as failureMessage,
// without installing anything; the second keeps a service Provisioning that
// long before it is installed or upgraded.
const (
	// AnnotationHang ("true") keeps the services of the template Provisioning
	// forever, for tests of deployment timeouts.
	AnnotationHang = "standin.apiary.dev/hang"
	// AnnotationChart names the embedded chart the template installs
	// (ChartWorkspace when absent; see ChartNames).
	AnnotationChart = "standin.apiary.dev/chart"
	// AnnotationInstant ("true") reports the services of the template
	// Deployed (Provisioning first, as always) without running Helm, for
	// benchmarks of the controller alone; they count as installs.
	AnnotationInstant = "standin.apiary.dev/instant"
)

// Defaults of ServiceSets.
const (
	// DefaultRetryInterval is how long a service stays Failed after a Helm
	// error before the stand-in tries again.
	DefaultRetryInterval = 5 * time.Second
	// DefaultDeletionGrace is how long a deleted ServiceSet waits for a child
	// cluster that cannot be reached before it lets go of its releases.
	DefaultDeletionGrace = 5 * time.Second
)

// ServiceSets plays kcm's services part (the ServiceSet controller with its
// Sveltos adapter) against envtest: it installs every service of a
// ServiceSet as a Helm release, from a chart embedded in this package, on
// the child cluster whose kubeconfig Secret <spec.cluster>-kubeconfig the
// ServiceSet's namespace holds, and reports Pending, Provisioning, Deployed,
// Failed and Deleting as the adapter does (and Deleted, lastDeployedHash and
// ServicesInReadyState when it reports like kcm v1.12: ReportAs). While a
// ServiceSet carries k0rdentv1beta1.ServiceSetPausedAnnotation it installs,
// upgrades and uninstalls nothing and leaves the status as it was; a deleted
// one keeps kcm's finalizer until the annotation is removed. It implements
// Services, so a StandIn with Services set to it aggregates the services
// into its ClusterDeployments. Set the fields before SetupWithManager.
type ServiceSets struct {
	// Client reaches the management cluster; nil means the manager's
	// (cached) client.
	Client client.Client

	// RetryInterval is the wait before a failed Helm operation is retried;
	// zero means DefaultRetryInterval.
	RetryInterval time.Duration

	// DeletionGrace is how long a deleted ServiceSet keeps trying to
	// uninstall from a child it cannot reach; zero means DefaultDeletionGrace.
	DeletionGrace time.Duration

	// ReportAs is the kcm release line whose status the stand-in writes;
	// the zero value, KCM19, reports as kcm 1.8 to 1.10 do.
	ReportAs KCMRelease

	// Workers are the controller's concurrent reconciles; 0 means one.
	Workers int

	helm helmClients

	mu      sync.Mutex
	records map[serviceKey]*record
}

// serviceKey identifies one service of one ServiceSet.
type serviceKey struct {
	uid             types.UID
	namespace, name string
}

// record is what the stand-in remembers of a service: the inputs it is
// provisioning (hash) and how that went.
type record struct {
	hash     string
	started  time.Time
	applied  bool
	failure  string
	failedAt time.Time
}

var _ Services = &ServiceSets{}

// SetupWithManager registers the ServiceSet controller with a manager. It
// watches ServiceSets, ServiceTemplates, Secrets (kubeconfigs and
// valuesFrom) and ConfigMaps (valuesFrom). Several may run in one process.
func (s *ServiceSets) SetupWithManager(mgr ctrl.Manager) error {
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	// The maps below and serviceSetsOf list through these indexes: a
	// namespace of 10,000 ServiceSets copied out of the cache on every event
	// made the stand-in, not the code under test, what a benchmark timed.
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &k0rdentv1beta1.ServiceSet{}, indexCluster, func(o client.Object) []string {
		return []string{o.(*k0rdentv1beta1.ServiceSet).Spec.Cluster}
	}); err != nil {
		return fmt.Errorf("indexing ServiceSets by cluster: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &k0rdentv1beta1.ServiceSet{}, indexUses, func(o client.Object) []string {
		return usedObjects(o.(*k0rdentv1beta1.ServiceSet))
	}); err != nil {
		return fmt.Errorf("indexing ServiceSets by what they use: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("standin-serviceset").
		For(&k0rdentv1beta1.ServiceSet{}).
		Watches(&k0rdentv1beta1.ServiceTemplate{}, s.enqueue("ServiceTemplate")).
		Watches(&corev1.Secret{}, s.enqueue("Secret")).
		Watches(&corev1.ConfigMap{}, s.enqueue("ConfigMap")).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: max(s.Workers, 1)}).
		Complete(s)
	if err != nil {
		return fmt.Errorf("setting up the ServiceSet stand-in: %w", err)
	}
	return nil
}

// enqueue maps an object of a kind to the ServiceSets of its namespace that
// use it: those whose indexUses values hold it.
func (s *ServiceSets) enqueue(kind string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list k0rdentv1beta1.ServiceSetList
		if err := s.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{indexUses: useKey(kind, o.GetName())}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing ServiceSets", "namespace", o.GetNamespace())
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	})
}

// The stand-in's cache indexes of ServiceSets: the cluster a ServiceSet
// deploys to, and the objects it uses (useKey).
const (
	indexCluster = "standin.spec.cluster"
	indexUses    = "standin.uses"
)

// useKey is the indexUses value of an object of a kind.
func useKey(kind, name string) string { return kind + "/" + name }

// usedObjects are the indexUses values of a ServiceSet, the objects whose
// change reconciles it: its cluster's kubeconfig Secret, its services'
// templates and valuesFrom Secrets and ConfigMaps; none without a cluster,
// for which the stand-in deploys nothing.
func usedObjects(ss *k0rdentv1beta1.ServiceSet) []string {
	if ss.Spec.Cluster == "" {
		return nil
	}
	out := []string{useKey("Secret", KubeconfigSecretName(ss.Spec.Cluster))}
	for i := range ss.Spec.Services {
		out = append(out, useKey("ServiceTemplate", ss.Spec.Services[i].Template))
		for _, v := range ss.Spec.Services[i].ValuesFrom {
			if v.Kind == "Secret" || v.Kind == "ConfigMap" {
				out = append(out, useKey(v.Kind, v.Name))
			}
		}
	}
	return out
}

// ServiceStates returns the status.services of every ServiceSet in the
// ClusterDeployment's namespace whose spec.cluster names it, in the order of
// the ServiceSets' names, as kcm collects them.
func (s *ServiceSets) ServiceStates(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) ([]k0rdentv1beta1.ServiceState, error) {
	sets, err := s.serviceSetsOf(ctx, cd, func(ss *k0rdentv1beta1.ServiceSet) bool { return ss.Spec.Cluster == cd.Name },
		client.MatchingFields{indexCluster: cd.Name})
	if err != nil {
		return nil, err
	}
	var states []k0rdentv1beta1.ServiceState
	for i := range sets {
		states = append(states, sets[i].Status.Services...)
	}
	return states, nil
}

// Cleanup deletes the ServiceSets the ClusterDeployment owns (as kcm does on
// the deletion of a ClusterDeployment) and reports whether they are gone.
func (s *ServiceSets) Cleanup(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (bool, error) {
	owned, err := s.serviceSetsOf(ctx, cd, func(ss *k0rdentv1beta1.ServiceSet) bool {
		for _, ref := range ss.OwnerReferences {
			if ref.Kind == k0rdentv1beta1.ClusterDeploymentKind && ref.Name == cd.Name &&
				strings.HasPrefix(ref.APIVersion, k0rdentv1beta1.GroupVersion.Group+"/") {
				return true
			}
		}
		return false
	})
	if err != nil {
		return false, err
	}
	for i := range owned {
		if !owned[i].DeletionTimestamp.IsZero() {
			continue
		}
		if err := s.Client.Delete(ctx, &owned[i]); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting ServiceSet %s/%s: %w", owned[i].Namespace, owned[i].Name, err)
		}
	}
	return len(owned) == 0, nil
}

// serviceSetsOf lists the ServiceSets of a ClusterDeployment's namespace
// that match, sorted by name; opts narrow what is read (an index).
func (s *ServiceSets) serviceSetsOf(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment,
	match func(*k0rdentv1beta1.ServiceSet) bool, opts ...client.ListOption) ([]k0rdentv1beta1.ServiceSet, error) {
	var list k0rdentv1beta1.ServiceSetList
	if err := s.Client.List(ctx, &list, append([]client.ListOption{client.InNamespace(cd.Namespace)}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing ServiceSets in %s: %w", cd.Namespace, err)
	}
	var out []k0rdentv1beta1.ServiceSet
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Installs returns how often the stand-in installed a release (namespace and
// name) on the cluster of a ClusterDeployment; upgrades are not counted.
func (s *ServiceSets) Installs(cluster types.NamespacedName, namespace, release string) int {
	n, _ := s.helm.counts(releaseKey{cluster: cluster, namespace: namespace, name: release})
	return n
}

// Upgrades returns how often the stand-in upgraded a release (namespace and
// name) on the cluster of a ClusterDeployment.
func (s *ServiceSets) Upgrades(cluster types.NamespacedName, namespace, release string) int {
	_, n := s.helm.counts(releaseKey{cluster: cluster, namespace: namespace, name: release})
	return n
}

// record returns the record of a service, starting a new one when the
// service's inputs changed.
func (s *ServiceSets) record(key serviceKey, hash string, now time.Time) *record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[serviceKey]*record{}
	}
	r, ok := s.records[key]
	if !ok || r.hash != hash {
		r = &record{hash: hash, started: now}
		s.records[key] = r
	}
	return r
}

// update changes a record under the lock.
func (s *ServiceSets) update(r *record, change func(*record)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(r)
}

// snapshot returns a copy of a record taken under the lock.
func (s *ServiceSets) snapshot(r *record) record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *r
}

// forget drops the record of one service, or of every service of a
// ServiceSet when name and namespace are empty.
func (s *ServiceSets) forget(key serviceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.records {
		if k == key || (key.name == "" && key.namespace == "" && k.uid == key.uid) {
			delete(s.records, k)
		}
	}
}

func (s *ServiceSets) retryInterval() time.Duration {
	if s.RetryInterval > 0 {
		return s.RetryInterval
	}
	return DefaultRetryInterval
}

func (s *ServiceSets) deletionGrace() time.Duration {
	if s.DeletionGrace > 0 {
		return s.DeletionGrace
	}
	return DefaultDeletionGrace
}
