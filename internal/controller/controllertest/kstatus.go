package controllertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// conditioned is a Colony or a TenantQuota.
type conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// wantConditionsKstatus is the kstatus a Colony or TenantQuota version
// must read as, and what the doc's healthCheckExprs must make of it.
func wantConditionsKstatus(obj conditioned) (kstatus, flux status.Status) {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	og, _, _ := unstructured.NestedInt64(m, "status", "observedGeneration")
	switch {
	case !obj.GetDeletionTimestamp().IsZero():
		return status.TerminatingStatus, status.InProgressStatus
	case og != obj.GetGeneration():
		return status.InProgressStatus, status.InProgressStatus
	case ConditionStatus(obj, commonv1.StalledCondition) == metav1.ConditionTrue:
		return status.FailedStatus, status.FailedStatus
	case ConditionStatus(obj, commonv1.ReadyCondition) == metav1.ConditionTrue:
		return status.CurrentStatus, status.CurrentStatus
	}
	return status.InProgressStatus, status.InProgressStatus
}

// WatchConditionsKstatus checks every version of the objects of list's
// kind named by keep that the API server serves, with kstatus and with
// Flux's evaluator of the doc's healthCheckExprs, and records the verdicts.
func WatchConditionsKstatus(t *testing.T, kind string, list client.ObjectList, opts []client.ListOption, keep func(client.Object) bool) *KstatusRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(Env.Config, client.Options{Scheme: Env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := wc.Watch(ctx, list, opts...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rec := &KstatusRecorder{seen: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			obj, ok := ev.Object.(conditioned)
			if !ok || ev.Type == watch.Error || !keep(obj) {
				continue
			}
			res, err := KstatusOf(obj)
			flux, fluxErr := fluxHealthOf(kind, obj)
			wantK, wantF := wantConditionsKstatus(obj)
			rec.mu.Lock()
			switch {
			case err != nil || fluxErr != nil:
				rec.errors = append(rec.errors, fmt.Sprintf("%s: %v %v", obj.GetName(), err, fluxErr))
			case res.Status != wantK || flux != wantF:
				rec.errors = append(rec.errors, fmt.Sprintf("%s %s generation %d: kstatus %s (%s), Flux %s; want %s and %s",
					kind, obj.GetName(), obj.GetGeneration(), res.Status, res.Message, flux, wantK, wantF))
			default:
				rec.seen[string(res.Status)] = true
				if obj.GetGeneration() > 1 && wantK == status.InProgressStatus {
					rec.seen["changed "+string(res.Status)] = true
				}
			}
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); watcher.Stop(); <-done })
	return rec
}

// KstatusOf is what Flux's health checks and kubectl wait read from obj.
func KstatusOf(obj client.Object) (*status.Result, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return status.Compute(&unstructured.Unstructured{Object: m})
}

// wantKstatus is the kstatus a workspace version must read as: Terminating
// once deleted; InProgress while its status is behind its spec; Current
// when Running, Failed when Failed and InProgress in every other phase.
func wantKstatus(w *workspacesv1.WorkspaceDeployment) status.Status {
	switch {
	case !w.DeletionTimestamp.IsZero():
		return status.TerminatingStatus
	case w.Status.ObservedGeneration != w.Generation:
		return status.InProgressStatus
	case w.Status.Phase == workspacesv1.PhaseRunning:
		return status.CurrentStatus
	case w.Status.Phase == workspacesv1.PhaseFailed:
		return status.FailedStatus
	}
	return status.InProgressStatus
}

// wantFlux is what the doc's healthCheckExprs must make of a workspace
// version: wantKstatus, but in progress while it is deleted (Flux's CEL
// reader has no Terminating).
func wantFlux(w *workspacesv1.WorkspaceDeployment) status.Status {
	if s := wantKstatus(w); s != status.TerminatingStatus {
		return s
	}
	return status.InProgressStatus
}

// KstatusRecorder computes kstatus for every version of the workspaces of a
// namespace that the API server serves, as a watching Flux would see them,
// and Flux's verdict with the healthCheckExprs of docs/flux-health-checks.md.
type KstatusRecorder struct {
	mu     sync.Mutex
	seen   map[string]bool // "<phase> <kstatus>"
	errors []string
}

// WatchKstatus records, from a watch, kstatus and Flux's verdict for every
// version of the workspaces of ns until the test ends.
func WatchKstatus(t *testing.T, ns string) *KstatusRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(Env.Config, client.Options{Scheme: Env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := wc.Watch(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rec := &KstatusRecorder{seen: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			w, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
			if !ok || ev.Type == watch.Error {
				continue
			}
			res, err := KstatusOf(w)
			flux, fluxErr := fluxHealthOf("WorkspaceDeployment", w)
			rec.mu.Lock()
			switch {
			case err != nil || fluxErr != nil:
				rec.errors = append(rec.errors, fmt.Sprintf("%s: %v %v", w.Name, err, fluxErr))
			case flux != wantFlux(w):
				rec.errors = append(rec.errors, fmt.Sprintf("%s generation %d observed %d phase %q: Flux healthCheckExprs say %s, want %s",
					w.Name, w.Generation, w.Status.ObservedGeneration, w.Status.Phase, flux, wantFlux(w)))
			case res.Status != wantKstatus(w):
				rec.errors = append(rec.errors, fmt.Sprintf("%s generation %d observed %d phase %q: kstatus %s (%s), want %s",
					w.Name, w.Generation, w.Status.ObservedGeneration, w.Status.Phase, res.Status, res.Message, wantKstatus(w)))
			default:
				rec.seen[fmt.Sprintf("%s %s", w.Status.Phase, res.Status)] = true
				if !w.DeletionTimestamp.IsZero() {
					rec.seen["deleted "+string(res.Status)] = true
				}
				if w.Status.ObservedGeneration != w.Generation && w.Status.ObservedGeneration > 0 {
					rec.seen["behind "+string(res.Status)] = true
				}
			}
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); watcher.Stop(); <-done })
	return rec
}

// Check fails g if a version read wrong, or if a verdict of want was
// not seen yet.
func (r *KstatusRecorder) Check(g Gomega, want ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.Expect(r.errors).To(BeEmpty())
	for _, w := range want {
		g.Expect(r.seen).To(HaveKey(w))
	}
}
