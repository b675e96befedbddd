package prerequisites_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/test/standin"
)

// recorder keeps every version of one object a watch delivers, until the
// test ends.
type recorder[T client.Object] struct {
	mu   sync.Mutex
	seen []T
}

func (r *recorder[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.seen...)
}

// record watches one object of list's kind by name, from now on.
func record[T client.Object](t *testing.T, list client.ObjectList, ns, name string) *recorder[T] {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, list, client.InNamespace(ns), client.MatchingFieldsSelector{
		Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder[T]{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				r.mu.Lock()
				r.seen = append(r.seen, ev.Object.(T))
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return r
}

// twoCertManagers creates a tenant with the templates cert-manager-1-16
// and cert-manager-1-17 of the chart cert-manager.
func twoCertManagers(t *testing.T, prefix string) string {
	t.Helper()
	ns := tenant(t, prefix)
	certManager(t, ns, "cert-manager-1-16", "1.16.0")
	certManager(t, ns, "cert-manager-1-17", "1.17.0")
	return ns
}

// serviceTemplateOf is the template a prerequisite ServiceSet installs now.
func serviceTemplateOf(g Gomega, ss *k0rdentv1beta1.ServiceSet) string {
	got := &k0rdentv1beta1.ServiceSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
	g.Expect(got.Spec.Services).To(HaveLen(1))
	return got.Spec.Services[0].Template
}

// TestPrerequisiteUpgradedOnceByNewerClass: a class pinning cert-manager
// 1.17 on a cluster where a class pinning 1.16 installed it upgrades the
// shared install in place (same ServiceSet, same release), exactly once;
// the running workspace of the older class stays Running throughout; and a
// new workspace of the older class is served by the newer install without
// downgrading it.
func TestPrerequisiteUpgradedOnceByNewerClass(t *testing.T) {
	apiary(t, 0)
	g := NewWithT(t)
	ns := twoCertManagers(t, "upgrade")
	older := class(t, ns, "cm16-"+ns, "cert-manager-1-16", "")
	newer := class(t, ns, "cm17-"+ns, "cert-manager-1-17", "")

	a := workspace(t, ns, ns+"-a", older)
	aRunning := running(t, a)
	ss := onePrerequisite(t, ns)
	g.Expect(ss.Name).To(Equal("wsprereq-c1-cert-manager-1-16"))
	installs, upgrades := counts(ns, release)
	g.Expect([]int{installs, upgrades}).To(Equal([]int{1, 0}))
	phasesOfA := record[*workspacesv1.WorkspaceDeployment](t, &workspacesv1.WorkspaceDeploymentList{}, ns, a.Name)

	b := workspace(t, ns, ns+"-b", newer)
	bRunning := running(t, b)
	g.Expect(bRunning.Status.Prerequisites).To(ConsistOf(SatisfyAll(
		HaveField("Name", "cert-manager-1-17"), HaveField("Phase", workspacesv1.PrerequisiteSatisfied),
		HaveField("Source", workspacesv1.PrerequisiteSourceWorkspace), HaveField("Namespace", ns))))
	g.Expect(onePrerequisite(t, ns).Name).To(Equal(ss.Name), "upgraded in place, not installed beside")
	g.Expect(serviceTemplateOf(g, ss)).To(Equal("cert-manager-1-17"))
	g.Eventually(func() []int {
		installs, upgrades := counts(ns, release)
		return []int{installs, upgrades}
	}, timeout, 200*time.Millisecond).Should(Equal([]int{1, 1}), "the same release, upgraded once")

	c := workspace(t, ns, ns+"-c", older)
	cRunning := running(t, c)
	g.Expect(cRunning.Status.Prerequisites).To(ConsistOf(SatisfyAll(
		HaveField("Name", "cert-manager-1-16"), HaveField("Phase", workspacesv1.PrerequisiteSatisfied),
		HaveField("Message", ContainSubstring("newer than cert-manager-1-16")))))
	g.Consistently(func(g Gomega) []any {
		installs, upgrades := counts(ns, release)
		return []any{serviceTemplateOf(g, ss), installs, upgrades, len(prerequisites(g, ns))}
	}, 3*time.Second, 200*time.Millisecond).Should(Equal([]any{"cert-manager-1-17", 1, 1, 1}),
		"the older class neither downgrades nor installs again")

	for _, w := range phasesOfA.all() {
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "the running workspace of the older class flipped: %s", w.Status.Message)
	}
	aNow := running(t, a)
	g.Expect(aNow.Status.Prerequisites).To(Equal(aRunning.Status.Prerequisites), "its prerequisite status is left as it was")
}

// TestPrerequisiteNeverDowngradedByRacingClasses: workspaces of classes
// pinning 1.17 and 1.18 that arrive together on an install of 1.16 leave it
// at 1.18, after at most one upgrade per newer version, and the install's
// template never goes down on the way.
func TestPrerequisiteNeverDowngradedByRacingClasses(t *testing.T) {
	apiary(t, 0)
	g := NewWithT(t)
	ns := tenant(t, "race")
	versions := map[string]string{"cert-manager-1-16": "1.16.0", "cert-manager-1-17": "1.17.0", "cert-manager-1-18": "1.18.0"}
	for name, v := range versions {
		certManager(t, ns, name, v)
	}
	a := workspace(t, ns, ns+"-a", class(t, ns, "cm16-"+ns, "cert-manager-1-16", ""))
	running(t, a)
	ss := onePrerequisite(t, ns)
	history := record[*k0rdentv1beta1.ServiceSet](t, &k0rdentv1beta1.ServiceSetList{}, ns, ss.Name)

	cls17, cls18 := class(t, ns, "cm17-"+ns, "cert-manager-1-17", ""), class(t, ns, "cm18-"+ns, "cert-manager-1-18", "")
	var ws []*workspacesv1.WorkspaceDeployment
	for i, cls := range []string{cls17, cls18, cls17, cls18} {
		ws = append(ws, workspace(t, ns, ns+"-"+string(rune('b'+i)), cls))
	}
	for _, w := range ws {
		running(t, w)
	}
	g.Expect(serviceTemplateOf(g, ss)).To(Equal("cert-manager-1-18"))
	g.Expect(prerequisites(g, ns)).To(HaveLen(1))
	installs, upgrades := counts(ns, release)
	g.Expect(installs).To(Equal(1))
	g.Expect(upgrades).To(BeNumerically("<=", 2))

	last := semver.MustParse("1.16.0")
	for _, s := range history.all() {
		v := semver.MustParse(versions[s.Spec.Services[0].Template])
		g.Expect(v.LessThan(last)).To(BeFalse(), "the install went down from %s to %s", last, v)
		last = v
	}
}

// TestLegacyPrerequisiteAdopted: a ServiceSet wsprereq-<cd>-<template> made
// as the exalsius operator makes it (no Apiary labels) serves the older
// class as it is, and a newer class upgrades that same object in place,
// adopting it, instead of installing a second copy.
func TestLegacyPrerequisiteAdopted(t *testing.T) {
	apiary(t, 0)
	g := NewWithT(t)
	ctx := context.Background()
	ns := twoCertManagers(t, "legacy")
	legacy := standin.NewServiceSet(ns, "wsprereq-c1-cert-manager-1-16", "c1", k0rdentv1beta1.ServiceWithValues{
		Name: release, Namespace: ns, Template: "cert-manager-1-16",
		HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{CreateNamespace: ptr.To(true)},
	})
	legacy.Labels["workspaces.exalsius.ai/role"] = "prerequisite"
	legacy.Labels["workspaces.exalsius.ai/cluster-deployment"] = "c1"
	legacy.Labels["workspaces.exalsius.ai/template"] = "cert-manager-1-16"
	g.Expect(env.Client.Create(ctx, legacy)).To(Succeed())
	g.Eventually(func() int { n, _ := counts(ns, release); return n }, timeout, 200*time.Millisecond).Should(Equal(1))

	a := workspace(t, ns, ns+"-a", class(t, ns, "cm16-"+ns, "cert-manager-1-16", ""))
	running(t, a)
	got := onePrerequisite(t, ns)
	g.Expect(got.Generation).To(Equal(int64(1)), "used as it is")
	g.Expect(got.Labels).NotTo(HaveKey(delivery.LabelOwnerKind))

	b := workspace(t, ns, ns+"-b", class(t, ns, "cm17-"+ns, "cert-manager-1-17", ""))
	running(t, b)
	got = onePrerequisite(t, ns)
	g.Expect(got.Name).To(Equal(legacy.Name))
	g.Expect(got.Spec.Services).To(ConsistOf(SatisfyAll(HaveField("Template", "cert-manager-1-17"), HaveField("Name", release))))
	g.Expect(got.Labels).To(HaveKeyWithValue(delivery.LabelOwnerKind, "Prerequisite"), "adopted by the upgrade")
	g.Eventually(func() []int {
		installs, upgrades := counts(ns, release)
		return []int{installs, upgrades}
	}, timeout, 200*time.Millisecond).Should(Equal([]int{1, 1}))
}

// TestOlderClassRefusesNewerInstallOutsideItsConstraint: a class whose
// prerequisite constrains the version to 1.16.x fails a new workspace with
// PrerequisiteVersionConflict once a newer class upgraded the install, and
// the install is not downgraded; its workspace that ran on the install
// before keeps running, also through a change of its spec.
func TestOlderClassRefusesNewerInstallOutsideItsConstraint(t *testing.T) {
	apiary(t, 0)
	g := NewWithT(t)
	ctx := context.Background()
	ns := twoCertManagers(t, "constraint")
	constrained := class(t, ns, "cm16-"+ns, "cert-manager-1-16", "~1.16.0")
	a := workspace(t, ns, ns+"-a", constrained)
	running(t, a)
	ss := onePrerequisite(t, ns)
	b := workspace(t, ns, ns+"-b", class(t, ns, "cm17-"+ns, "cert-manager-1-17", ""))
	running(t, b)
	g.Expect(serviceTemplateOf(g, ss)).To(Equal("cert-manager-1-17"))

	c := workspace(t, ns, ns+"-c", constrained)
	failed := eventuallyPhase(t, c, workspacesv1.PhaseFailed)
	cond := metaCondition(failed.Status.Conditions, workspacesv1.PrerequisitesMetCondition)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(workspacesv1.PrerequisiteVersionConflictReason))
	g.Expect(cond.Message).To(ContainSubstring("cert-manager-1-17 (1.17.0)"))
	g.Expect(serviceTemplateOf(g, ss)).To(Equal("cert-manager-1-17"), "not downgraded")

	// The workspace that ran on the install before is not failed for it,
	// also when a new generation of it passes the prerequisite step again.
	changed := get(g, a)
	changed.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello"}`)}
	g.Expect(env.Client.Update(ctx, changed)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, a)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(got.Status.ObservedGeneration).To(Equal(changed.Generation))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(get(g, a).Status.Prerequisites).To(ConsistOf(HaveField("Message", ContainSubstring("outside the class's versionConstraint"))))
}
