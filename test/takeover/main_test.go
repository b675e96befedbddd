// Package takeover_test proves that Apiary takes over, in place, what the
// exalsius operator leaves running, and that what Apiary leaves behind can
// be released once it is gone. A management control plane with the k0rdent
// stand-in (which installs every ServiceSet on one child control plane with
// Helm and counts installs and upgrades per release) holds objects shaped
// exactly as the exalsius operator writes them: created and updated, never
// applied, by a client whose field manager is the operator's ("manager"),
// with its names, labels, owner references and finalizers. Each test then
// starts an Apiary manager that takes over from that field manager, and
// watches what it writes.
package takeover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

const (
	timeout = 60 * time.Second
	poll    = 200 * time.Millisecond
	// operatorFieldManager is the exalsius operator's field manager: the
	// name of its binary, which controller-runtime uses when a client sets
	// none.
	operatorFieldManager = "manager"
)

var (
	env, child *testenv.Environment
	sets       *standin.ServiceSets
)

func TestMain(m *testing.M) {
	stand := &standin.StandIn{}
	world.Main(m, world.World{Name: "takeover", Management: true, Child: true, StandIn: stand.InWorld()},
		func(r *world.Running) error {
			env, child, sets = r.Management, r.Child, stand.ServiceSets()
			return nil
		})
}

// operator is the exalsius operator's client: every write a Create or an
// Update (of the object or its status) under its field manager.
func operator() client.Client { return client.WithFieldOwner(env.Client, operatorFieldManager) }

// apiary starts a manager that takes over the exalsius operator's fields.
func apiary(t *testing.T) *managertest.Manager {
	t.Helper()
	return managertest.Start(t, manager.Options{
		RestConfig:           env.Config,
		InventoryInterval:    time.Minute,
		NoCrossNamespaceRefs: true,
		AdoptFieldManagers:   []string{operatorFieldManager},
	})
}

// writes counts, per object name, the writes to objects of one kind in a
// namespace that change anything but their status: their metadata (the
// managed fields of the main resource included), their spec, or their
// existence. Status writes (the stand-in's) are not counted.
type writes struct {
	mu      sync.Mutex
	last    map[string]k0rdentv1beta1.ServiceSet
	updates map[string]int
	specs   map[string]int // generation changes
	deletes map[string]int
}

// watchServiceSets counts the writes to the ServiceSets of ns from now on,
// until the test ends.
func watchServiceSets(t *testing.T, ns string) *writes {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	list := &k0rdentv1beta1.ServiceSetList{}
	if err := wc.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	w := &writes{last: map[string]k0rdentv1beta1.ServiceSet{}, updates: map[string]int{}, specs: map[string]int{}, deletes: map[string]int{}}
	for _, ss := range list.Items {
		w.last[ss.Name] = ss
	}
	watcher, err := wc.Watch(context.Background(), &k0rdentv1beta1.ServiceSetList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Stop)
	go func() {
		for ev := range watcher.ResultChan() {
			ss, ok := ev.Object.(*k0rdentv1beta1.ServiceSet)
			if !ok {
				continue
			}
			w.observe(ev.Type, ss)
		}
	}()
	return w
}

func (w *writes) observe(typ watch.EventType, ss *k0rdentv1beta1.ServiceSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, seen := w.last[ss.Name]
	switch typ {
	case watch.Deleted:
		w.deletes[ss.Name]++
		delete(w.last, ss.Name)
		return
	case watch.Added, watch.Modified:
		if seen && !changedOutsideStatus(&prev, ss) {
			w.last[ss.Name] = *ss
			return
		}
		w.updates[ss.Name]++
		if seen && prev.Generation != ss.Generation {
			w.specs[ss.Name]++
		}
		w.last[ss.Name] = *ss
	}
}

// changedOutsideStatus reports whether anything but the status (and the
// status subresource's managed fields) differs.
func changedOutsideStatus(a, b *k0rdentv1beta1.ServiceSet) bool {
	return a.Generation != b.Generation ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Annotations, b.Annotations) ||
		!equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) ||
		!equality.Semantic.DeepEqual(a.Finalizers, b.Finalizers) ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(mainFields(a.ManagedFields), mainFields(b.ManagedFields)) ||
		!equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

func mainFields(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Subresource == "" {
			out = append(out, e)
		}
	}
	return out
}

// counts returns the non-status writes, generation changes and deletions
// of a ServiceSet seen so far.
func (w *writes) counts(name string) (updates, specs, deletes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.updates[name], w.specs[name], w.deletes[name]
}

// releaseCounts are the stand-in's installs and upgrades of a release in a
// child namespace, on cluster c1 of ns.
func releaseCounts(ns, childNS, release string) (installs, upgrades int) {
	cluster := types.NamespacedName{Namespace: ns, Name: "c1"}
	return sets.Installs(cluster, childNS, release), sets.Upgrades(cluster, childNS, release)
}

// managerOwns reports whether manager's entry (with operation op) on the
// main resource owns the field path, given as FieldsV1 keys such as
// "f:metadata", "f:labels", "f:team".
func managerOwns(g Gomega, obj metav1.Object, manager string, op metav1.ManagedFieldsOperationType, path ...string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Operation != op || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		g.Expect(jsonUnmarshal(e.FieldsV1.Raw, &fields)).To(Succeed())
		var cur any = fields
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[p]; !ok {
				return false
			}
		}
		return true
	}
	return false
}

func apierrorsIsNotFound(err error) bool { return apierrors.IsNotFound(err) }
