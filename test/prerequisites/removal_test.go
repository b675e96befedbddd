package prerequisites_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/prerequisite"
)

const release = "cert-manager-1-16" // the release of the cert-manager-1-16 prerequisite

// shared is a tenant whose one workspace runs on a shared install of
// cert-manager-1-16.
type shared struct {
	ns, class string
	workspace *workspacesv1.WorkspaceDeployment
	install   *k0rdentv1beta1.ServiceSet
}

// runningOnCertManager creates a tenant, the cert-manager-1-16 template, a
// class needing it and a workspace of the class, and waits until the
// workspace runs on the one shared install.
func runningOnCertManager(t *testing.T, prefix string) shared {
	t.Helper()
	ns := tenant(t, prefix)
	certManager(t, ns, "cert-manager-1-16", "1.16.0")
	cls := class(t, ns, "cm16-"+ns, "cert-manager-1-16", "")
	w := workspace(t, ns, ns+"-a", cls)
	running(t, w)
	return shared{ns: ns, class: cls, workspace: w, install: onePrerequisite(t, ns)}
}

// unusedSince waits until the prerequisite ServiceSet records when it
// became unused and returns that time.
func unusedSince(t *testing.T, ss *k0rdentv1beta1.ServiceSet) time.Time {
	t.Helper()
	var since time.Time
	NewWithT(t).Eventually(func(g Gomega) {
		got := &k0rdentv1beta1.ServiceSet{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKey(prerequisite.AnnotationUnusedSince))
		since = prerequisite.UnusedSince(got.Annotations)
		g.Expect(since.IsZero()).To(BeFalse(), "the record %q does not parse", got.Annotations[prerequisite.AnnotationUnusedSince])
	}, timeout, 100*time.Millisecond).Should(Succeed())
	return since
}

// present reports whether the prerequisite ServiceSet exists and is not
// being deleted, with its unused-since record ("" for none).
func present(g Gomega, ss *k0rdentv1beta1.ServiceSet) (bool, string) {
	got := &k0rdentv1beta1.ServiceSet{}
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), got)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil && got.DeletionTimestamp.IsZero(), got.Annotations[prerequisite.AnnotationUnusedSince]
}

// TestPrerequisiteRemovedAfterGracePeriod: once the last workspace that
// needs a prerequisite is deleted, its shared ServiceSet records the time,
// stays for the whole grace period, and is then deleted, its release
// uninstalled from the child.
func TestPrerequisiteRemovedAfterGracePeriod(t *testing.T) {
	const grace = 6 * time.Second
	apiary(t, grace)
	g := NewWithT(t)
	sh := runningOnCertManager(t, "grace")
	ns, a, ss := sh.ns, sh.workspace, sh.install
	g.Expect(installedOnChild(g, ns, release)).To(BeTrue())
	g.Expect(ss.Annotations).NotTo(HaveKey(prerequisite.AnnotationUnusedSince), "a needed prerequisite has no record")

	deleted := deleteAndWait(t, a)
	g.Expect(deleted.IsZero()).To(BeFalse())
	since := unusedSince(t, ss)
	g.Expect(since).To(Equal(deleted.UTC()), "measured from the deletion of the last workspace")
	deadline := since.Add(grace)

	g.Consistently(func(g Gomega) bool {
		ok, _ := present(g, ss)
		return ok
	}, time.Until(deadline.Add(-300*time.Millisecond)), 100*time.Millisecond).Should(BeTrue(), "removed before the grace period passed")
	g.Eventually(func(g Gomega) bool {
		ok, _ := present(g, ss)
		return ok
	}, time.Until(deadline.Add(3*time.Second)), 100*time.Millisecond).Should(BeFalse(), "not removed once the grace period passed")
	g.Eventually(func(g Gomega) bool { return installedOnChild(g, ns, release) }, timeout, 200*time.Millisecond).Should(BeFalse(),
		"the release is uninstalled from the child")
	g.Eventually(func(g Gomega) []k0rdentv1beta1.ServiceSet { return prerequisites(g, ns) }, timeout, 200*time.Millisecond).Should(BeEmpty())
}

// TestPrerequisiteRemovalCancelledByNewWorkspace: a workspace that needs
// the prerequisite within the grace period cancels its removal and uses the
// install that is there; nothing is installed again.
func TestPrerequisiteRemovalCancelledByNewWorkspace(t *testing.T) {
	const grace = 5 * time.Second
	apiary(t, grace)
	g := NewWithT(t)
	sh := runningOnCertManager(t, "cancel")
	ns, cls, a, ss := sh.ns, sh.class, sh.workspace, sh.install
	deleteAndWait(t, a)
	deadline := unusedSince(t, ss).Add(grace)
	g.Expect(time.Until(deadline)).To(BeNumerically(">", time.Second), "too little of the grace period left to test")

	b := workspace(t, ns, ns+"-b", cls)
	g.Eventually(func(g Gomega) string {
		_, record := present(g, ss)
		return record
	}, timeout, 100*time.Millisecond).Should(BeEmpty(), "the record goes once a workspace needs the prerequisite again")
	running(t, b)
	g.Consistently(func(g Gomega) bool {
		ok, record := present(g, ss)
		return ok && record == ""
	}, time.Until(deadline.Add(2*time.Second)), 200*time.Millisecond).Should(BeTrue(), "removed although a workspace needs it")
	installs, upgrades := counts(ns, release)
	g.Expect([]int{installs, upgrades}).To(Equal([]int{1, 0}), "installed once, and used again as it was")
	g.Expect(prerequisites(g, ns)).To(HaveLen(1))
}

// TestPrerequisiteKeptForeverByDefault: without a grace period, the
// exalsius operator's behaviour: a prerequisite no workspace needs stays,
// unmarked.
func TestPrerequisiteKeptForeverByDefault(t *testing.T) {
	apiary(t, 0)
	g := NewWithT(t)
	sh := runningOnCertManager(t, "forever")
	ns, a, ss := sh.ns, sh.workspace, sh.install
	deleteAndWait(t, a)
	g.Consistently(func(g Gomega) bool {
		ok, record := present(g, ss)
		return ok && record == ""
	}, 4*time.Second, 200*time.Millisecond).Should(BeTrue())
	g.Expect(installedOnChild(g, ns, release)).To(BeTrue())
}

// TestPrerequisiteDeadlineSurvivesRestart: a manager that stops during the
// grace period and another that starts keep the deadline recorded on the
// ServiceSet: the removal neither moves later by the restart nor is lost.
func TestPrerequisiteDeadlineSurvivesRestart(t *testing.T) {
	const grace, down = 8 * time.Second, 3 * time.Second
	p := apiary(t, grace)
	g := NewWithT(t)
	sh := runningOnCertManager(t, "restart")
	a, ss := sh.workspace, sh.install
	deleteAndWait(t, a)
	since := unusedSince(t, ss)
	deadline := since.Add(grace)

	p.Restart(func() { time.Sleep(down) })
	g.Expect(time.Until(deadline)).To(BeNumerically(">", time.Second), "too little of the grace period left to test")
	g.Consistently(func(g Gomega) bool {
		ok, record := present(g, ss)
		return ok && record == prerequisite.FormatUnusedSince(since)
	}, time.Until(deadline.Add(-300*time.Millisecond)), 100*time.Millisecond).Should(BeTrue(),
		"the record is kept, and the prerequisite stays until the deadline")
	// A deadline reset by the restart would come at least `down` later.
	g.Eventually(func(g Gomega) bool {
		ok, _ := present(g, ss)
		return ok
	}, time.Until(deadline.Add(down-500*time.Millisecond)), 100*time.Millisecond).Should(BeFalse(),
		"removed at the recorded deadline")
}
