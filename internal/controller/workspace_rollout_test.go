package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceSpecChangeReadyOnlyWithItsRelease changes the values of
// Running workspaces whose releases take seconds to upgrade, and watches
// every version of them: Ready=True for the new generation appears only
// once k0rdent reports deployed the release of the ServiceSet that holds
// the new values, never from the old ServiceSet the cache may still hold
// right after the apply (a Flux health check or kubectl wait would pass
// before the change rolled out). Apiary's ServiceSet watch lags a second
// behind the API server meanwhile, so its cache holds the old ServiceSet
// for a while after each apply.
func TestWorkspaceSpecChangeReadyOnlyWithItsRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "rollout")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "slow", map[string]string{standin.AnnotationDelay: "2s"})
	workspaceClass(t, "r-"+ns, ns, "slow", nil)
	const n = 3
	var keys []client.ObjectKey
	for i := range n {
		// Child namespaces are shared by every test: names are unique.
		wsd := workspace(ns, fmt.Sprintf("%s-w%d", ns, i), "r-"+ns, "c1")
		wsd.Spec.Values = rawJSON(`{"greeting":"hello"}`)
		g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(wsd))
	}
	rv := ""
	for _, key := range keys {
		rv = eventuallyRunning(t, key).ResourceVersion
	}

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	watchCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	watcher, err := wc.Watch(watchCtx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	g.Expect(err).NotTo(HaveOccurred())
	defer watcher.Stop()

	serviceSetWatchLag.Store(int64(time.Second))
	t.Cleanup(func() { serviceSetWatchLag.Store(0) })
	generation := map[string]int64{}
	for _, key := range keys {
		w := getWorkspace(g, key)
		updateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Values = rawJSON(`{"greeting":"bonjour"}`) })
		generation[key.Name] = w.Generation
	}
	ready := map[string]bool{}
	for ev := range watcher.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", ev.Object)
		}
		got, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
		if !ok || generation[got.Name] == 0 || ready[got.Name] {
			continue
		}
		c := condition(got, commonv1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionTrue || got.Status.ObservedGeneration != generation[got.Name] {
			continue
		}
		// The ServiceSet is read after the workspace was written: it can
		// only be further along than when Apiary judged it.
		ss := serviceSetOf(g, got)
		g.Expect(ss.Spec.Services).To(HaveLen(1))
		g.Expect(ss.Spec.Services[0].Values).To(ContainSubstring("bonjour"),
			"%s: Ready=True for generation %d while the ServiceSet holds the old values", got.Name, got.Generation)
		verdict := k0rdentstatus.ReleaseVerdict(ss, got.Status.ServiceEntryName, nil, time.Hour, time.Now())
		g.Expect(verdict.Outcome).To(Equal(k0rdentstatus.ReleaseDeployed),
			"%s: Ready=True for generation %d while its new release is %s", got.Name, got.Generation, verdict.Seen)
		ready[got.Name] = true
		if len(ready) == n {
			break
		}
	}
	g.Expect(ready).To(HaveLen(n), "every workspace became Ready for its new generation")
	for _, key := range keys {
		g.Expect(releaseValues(g, "ws-"+key.Name, getWorkspace(g, key).Status.ServiceEntryName)).To(HaveKeyWithValue("greeting", "bonjour"))
	}
}
