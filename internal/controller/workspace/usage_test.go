package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/internal/usagereport"
)

// TestUsageCountsRunningTimeOnTheWorkspaceAndItsTenant runs a 2-GPU
// workspace on the fake clock: an hour running, two stopped, half an hour
// running again, then deleted after another half hour. What a user reads:
// the workspace's status.usage counts each admission when it ends (a
// stopped workspace costs nothing), the admission in force counts from its
// admittedAt; the TenantQuota's status.usage counts the same, by day, and
// keeps it after the workspace is gone; `apiary usage` reports it for the
// window.
func TestUsageCountsRunningTimeOnTheWorkspaceAndItsTenant(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "usage")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model, q := gpuTenant(t, ns, "A100", 2, quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: "nvidia.com/gpu", Count: 8}}})

	// On a day of its own, from 23:00 UTC: the first hour ends at midnight.
	t0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Add(23 * time.Hour)
	fake := controllertest.UseFakeClock(t, t0)
	gpuSeconds := func(u commonUsage) int64 { return usage.GPUSecondsOf(u, "nvidia.com/gpu") }

	key := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "w"), "g-"+ns, "c1", model, 2))
	running := controllertest.EventuallyRunning(t, key)
	g.Expect(running.Status.Admission.AdmittedAt.Time).To(BeTemporally("==", t0))
	g.Expect(running.Status.Usage).To(BeNil(), "nothing counted before an admission ends")
	g.Eventually(func(g Gomega) { g.Expect(chargeOf(g, q.Name, key)).NotTo(BeNil()) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// An hour later it stops: 2 GPUs × 3600 s on the workspace and its tenant.
	fake.SetTime(t0.Add(time.Hour))
	controllertest.SetStopped(t, key, true)
	stopped := controllertest.EventuallyStopped(t, key)
	g.Expect(stopped.Status.Admission).To(BeNil())
	g.Expect(stopped.Status.Usage).NotTo(BeNil())
	g.Expect(stopped.Status.Usage.GPUs).To(ConsistOf(gpuEntry("nvidia.com/gpu", model, 7200)))
	g.Eventually(func(g Gomega) {
		tq := getTenantQuota(g, q.Name)
		g.Expect(tq.Status.Usage).NotTo(BeNil())
		g.Expect(tq.Status.Usage.Total.GPUs).To(ConsistOf(gpuEntry("nvidia.com/gpu", model, 7200)))
		g.Expect(tq.Status.Usage.Since.Time).To(BeTemporally("==", t0))
		g.Expect(tq.Status.Usage.Days).To(HaveLen(1), "23:00 to midnight")
		g.Expect(tq.Status.Usage.Days[0].Date).To(Equal(t0.Format(time.DateOnly)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Stopped for two hours, running again for half an hour.
	fake.SetTime(t0.Add(3 * time.Hour))
	controllertest.SetStopped(t, key, false)
	again := controllertest.EventuallyRunning(t, key)
	g.Expect(again.Status.Admission.AdmittedAt.Time).To(BeTemporally("==", t0.Add(3*time.Hour)))
	now := t0.Add(3*time.Hour + 30*time.Minute)
	g.Expect(gpuSeconds(usage.OfWorkspace(again.Status, now))).To(Equal(int64(7200+3600)), "the stopped hours cost nothing")
	var tq *quotav1alpha1.TenantQuota
	g.Eventually(func(g Gomega) {
		tq = getTenantQuota(g, q.Name)
		w := controllertest.GetWorkspace(g, key)
		held := quota.HeldUsage(tq, []quota.Member{{Ref: quota.RefOf(w), Records: w.Status.QuotaCharges}})
		g.Expect(gpuSeconds(usage.Now(tq.Status.Usage, held, now))).To(Equal(int64(7200 + 3600)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// apiary usage, for the window of both days, reads the same; for the
	// second day only, what fell in it.
	report := func(from, to time.Time) usagereport.Row {
		var out, errOut bytes.Buffer
		code := usagereport.RunWith([]string{"--tenant", q.Name, "-o", "json", "--from", from.Format(time.DateOnly), "--to", to.Format(time.DateOnly)},
			&out, &errOut, now, controllertest.Env.Client)
		g.Expect(code).To(Equal(0), errOut.String())
		var rows []usagereport.Row
		g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed())
		g.Expect(rows).To(HaveLen(1))
		g.Expect(rows[0].Complete).To(BeTrue())
		return rows[0]
	}
	g.Expect(gpuSeconds(report(t0, now).Usage)).To(Equal(int64(7200 + 3600)))
	g.Expect(gpuSeconds(report(now, now).Usage)).To(Equal(int64(3600)), "the half hour after 02:00 on the second day")

	// Deleted half an hour later: the tenant keeps all of it.
	fake.SetTime(t0.Add(4 * time.Hour))
	controllertest.DeleteWorkspace(t, key)
	g.Eventually(func(g Gomega) {
		tq := getTenantQuota(g, q.Name)
		g.Expect(tq.Status.Usage.Total.GPUs).To(ConsistOf(gpuEntry("nvidia.com/gpu", model, 7200+7200)))
		g.Expect(tq.Status.Usage.Days).To(HaveLen(2))
		g.Expect(tq.Status.Usage.Days[1].GPUs).To(ConsistOf(gpuEntry("nvidia.com/gpu", model, 7200)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(gpuSeconds(report(t0, t0.Add(4*time.Hour)).Usage)).To(Equal(int64(14400)))
}

type commonUsage = commonv1.ResourceUsage

func gpuEntry(resource, model string, seconds int64) commonv1.GPUSeconds {
	return commonv1.GPUSeconds{ResourceName: resource, Model: model, Seconds: seconds}
}

func getTenantQuota(g Gomega, name string) *quotav1alpha1.TenantQuota {
	q := &quotav1alpha1.TenantQuota{}
	g.Expect(controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q)).To(Succeed())
	return q
}
