package crash_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// relists counts the times a follow had to list again: its watch could
// not resume (an API server restarted with a new watch cache answers 410
// Gone to an older resource version).
var relists atomic.Int64

// follow lists the objects of list's kind in namespace, hands each to
// observe as Added, then every change until the test ends. The watch
// resumes where it left off across connection errors; when it cannot, the
// objects are listed again, those gone handed on as Deleted and the others
// as Added (observe must take an object it knows again).
func follow(t testing.TB, list client.ObjectList, namespace string, observe func(watch.EventType, client.Object)) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	known := map[string]client.Object{}
	relist := func() (string, error) {
		current := list.DeepCopyObject().(client.ObjectList)
		if err := wc.List(ctx, current, client.InNamespace(namespace)); err != nil {
			return "", fmt.Errorf("listing %T: %w", list, err)
		}
		items, err := meta.ExtractList(current)
		if err != nil {
			return "", err
		}
		seen := map[string]bool{}
		for _, it := range items {
			o := it.(client.Object)
			seen[o.GetName()] = true
			known[o.GetName()] = o
			observe(watch.Added, o)
		}
		for name, o := range known {
			if !seen[name] {
				delete(known, name)
				observe(watch.Deleted, o)
			}
		}
		return current.GetResourceVersion(), nil
	}
	rv, err := relist()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := toolswatch.NewRetryWatcherWithContext(ctx, rv, watcher{c: wc, list: list, namespace: namespace})
			if err != nil {
				return
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
					continue
				}
				if ev.Type == watch.Deleted {
					delete(known, obj.GetName())
				} else {
					known[obj.GetName()] = obj
				}
				observe(ev.Type, obj)
			}
			w.Stop()
			for ctx.Err() == nil {
				if rv, err = relist(); err == nil {
					relists.Add(1)
					break
				}
				time.Sleep(time.Second)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// watcher adapts a controller-runtime client to client-go's watch interface.
type watcher struct {
	c         client.WithWatch
	list      client.ObjectList
	namespace string
}

func (w watcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	i, err := w.c.Watch(ctx, w.list.DeepCopyObject().(client.ObjectList), client.InNamespace(w.namespace), &client.ListOptions{Raw: &opts})
	if err != nil {
		return nil, fmt.Errorf("watching: %w", err)
	}
	return i, nil
}
