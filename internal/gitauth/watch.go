package gitauth

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Watcher calls back when a watched Secret is created, changed or deleted,
// from the Secret informer of the manager's cache: watching costs no API
// request. The Git sinks use it to retry at once, with the new
// credentials, what failed with the old ones. Add it to the manager: it is
// a Runnable.
type Watcher struct {
	// Informers is the manager's cache.
	Informers cache.Informers

	mu   sync.Mutex
	subs map[types.NamespacedName][]func()
}

// Watch calls fn after every change of the Secret key, from now on.
func (w *Watcher) Watch(key types.NamespacedName, fn func()) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[types.NamespacedName][]func(){}
	}
	w.subs[key] = append(w.subs[key], fn)
}

// Start registers the handler on the Secret informer and runs until ctx
// ends.
func (w *Watcher) Start(ctx context.Context) error {
	inf, err := w.Informers.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watching Secrets: %w", err)
	}
	reg, err := inf.AddEventHandler(handler{w})
	if err != nil {
		return fmt.Errorf("watching Secrets: %w", err)
	}
	<-ctx.Done()
	_ = inf.RemoveEventHandler(reg)
	return nil
}

// NeedLeaderElection is false: a standby replica's callbacks find no
// running sink to wake, which costs nothing.
func (w *Watcher) NeedLeaderElection() bool { return false }

func (w *Watcher) changed(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	w.mu.Lock()
	fns := append([]func(){}, w.subs[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]...)
	w.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// handler passes on changes, but not the Secrets listed at start: those
// are read when first used.
type handler struct{ w *Watcher }

func (h handler) OnAdd(obj any, initial bool) {
	if !initial {
		h.w.changed(obj)
	}
}

func (h handler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*corev1.Secret)
	n, ok2 := newObj.(*corev1.Secret)
	if ok1 && ok2 && o.ResourceVersion == n.ResourceVersion {
		return // a resync
	}
	h.w.changed(newObj)
}

func (h handler) OnDelete(obj any) { h.w.changed(obj) }
