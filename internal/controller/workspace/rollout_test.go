package workspace_test

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
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
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
	ns := controllertest.Env.NewNamespace(t, "rollout")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "slow", map[string]string{standin.AnnotationDelay: "2s"})
	controllertest.WorkspaceClass(t, "r-"+ns, ns, "slow", nil)
	const n = 3
	var keys []client.ObjectKey
	for i := range n {
		// Child namespaces are shared by every test: names are unique.
		wsd := controllertest.NewWorkspace(ns, fmt.Sprintf("%s-w%d", ns, i), "r-"+ns, "c1")
		wsd.Spec.Values = controllertest.RawJSON(`{"greeting":"hello"}`)
		g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(wsd))
	}
	rv := ""
	for _, key := range keys {
		rv = controllertest.EventuallyRunning(t, key).ResourceVersion
	}

	wc, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	watchCtx, cancel := context.WithTimeout(ctx, controllertest.Timeout)
	defer cancel()
	watcher, err := wc.Watch(watchCtx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	g.Expect(err).NotTo(HaveOccurred())
	defer watcher.Stop()

	controllertest.ServiceSetWatchLag.Store(int64(time.Second))
	t.Cleanup(func() { controllertest.ServiceSetWatchLag.Store(0) })
	generation := map[string]int64{}
	for _, key := range keys {
		w := controllertest.GetWorkspace(g, key)
		controllertest.UpdateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) {
			w.Spec.Values = controllertest.RawJSON(`{"greeting":"bonjour"}`)
		})
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
		c := controllertest.Condition(got, commonv1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionTrue || got.Status.ObservedGeneration != generation[got.Name] {
			continue
		}
		// The ServiceSet is read after the workspace was written: it can
		// only be further along than when Apiary judged it.
		ss := controllertest.ServiceSetOf(g, got)
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
		g.Expect(controllertest.ReleaseValues(g, "ws-"+key.Name, controllertest.GetWorkspace(g, key).Status.ServiceEntryName)).To(HaveKeyWithValue("greeting", "bonjour"))
	}
}
