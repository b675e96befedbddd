package activity_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/workspace/activity"
)

// observe asks the source about a workspace namespace over a one-minute window, now.
func observe(src *activity.Prometheus, namespace string) (activity.Observation, time.Time, error) {
	now := time.Now()
	obs, err := src.Observe(context.Background(), activity.Target{Namespace: namespace, Window: time.Minute, Format: activity.PrometheusGPU}, now)
	return obs, now, err
}

// eventually waits until Prometheus has scraped what the exporters serve
// and the source reads want.
func eventually(t *testing.T, src *activity.Prometheus, namespace string, want func(Gomega, activity.Observation, time.Time)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		obs, now, err := observe(src, namespace)
		g.Expect(err).NotTo(HaveOccurred())
		want(g, obs, now)
	}, 20*time.Second, 250*time.Millisecond).Should(Succeed())
}

func active(g Gomega, obs activity.Observation, now time.Time) {
	g.Expect(obs.Known).To(BeTrue(), obs.Detail)
	g.Expect(obs.LastActivity).To(Equal(now), obs.Detail)
}

func idle(g Gomega, obs activity.Observation, now time.Time) {
	g.Expect(obs.Known).To(BeTrue(), obs.Detail)
	g.Expect(obs.LastActivity).To(Equal(now.Add(-time.Minute)), obs.Detail)
}

func unknown(g Gomega, obs activity.Observation, _ time.Time) {
	g.Expect(obs.Known).To(BeFalse(), obs.Detail)
}

// TestPrometheusSourceUnderBothScrapeSettings: with the defaults (the
// metric DCGM_FI_DEV_GPU_UTIL, the namespace label namespace or
// exported_namespace), a busy GPU reads active and an idle one idle whether
// the scrape honours the exporter's labels or renames them; a namespace with
// no series reads unknown; a series that disappears keeps its samples for the
// window and then reads unknown.
func TestPrometheusSourceUnderBothScrapeSettings(t *testing.T) {
	src := &activity.Prometheus{URL: prometheusURL}
	for name, e := range map[string]*exporter{"honor_labels false": honorFalse, "honor_labels true": honorTrue} {
		t.Run(name, func(t *testing.T) {
			busy, quiet := "ws-busy-"+name[13:], "ws-idle-"+name[13:]
			e.set(busy, gpuSeries{metric: activity.DefaultGPUMetric, namespace: busy, pod: "nb-0", value: 87})
			e.set(quiet, gpuSeries{metric: activity.DefaultGPUMetric, namespace: quiet, pod: "nb-0", value: 0})
			eventually(t, src, busy, active)
			eventually(t, src, quiet, idle)
			eventually(t, src, "ws-nobody-"+name[13:], unknown)

			// Idle after busy: the busy samples stay within the window.
			e.set(busy, gpuSeries{metric: activity.DefaultGPUMetric, namespace: busy, pod: "nb-0", value: 0})
			time.Sleep(2 * time.Second)
			eventually(t, src, busy, active)
		})
	}

	// Only the label the scrape left names the workspace: a source told to
	// read one label misses the other setting's series.
	honorTrue.set("ws-only-true", gpuSeries{metric: activity.DefaultGPUMetric, namespace: "ws-only-true", pod: "nb-0", value: 50})
	honorFalse.set("ws-only-false", gpuSeries{metric: activity.DefaultGPUMetric, namespace: "ws-only-false", pod: "nb-0", value: 50})
	eventually(t, src, "ws-only-true", active)
	eventually(t, src, "ws-only-false", active)
	eventually(t, &activity.Prometheus{URL: prometheusURL, NamespaceLabel: "namespace"}, "ws-only-false", unknown)
	eventually(t, &activity.Prometheus{URL: prometheusURL, NamespaceLabel: "exported_namespace"}, "ws-only-true", unknown)
	eventually(t, &activity.Prometheus{URL: prometheusURL, NamespaceLabel: "exported_namespace"}, "ws-only-false", active)
}

// TestPrometheusSourceSeriesThatDisappears: an exporter that stops serving a
// GPU's series (the pod went, or the exporter lost its pod mapping and with
// it the namespace label) leaves the last samples within the window.
func TestPrometheusSourceSeriesThatDisappears(t *testing.T) {
	src := &activity.Prometheus{URL: prometheusURL}
	honorFalse.set("ws-gone", gpuSeries{metric: activity.DefaultGPUMetric, namespace: "ws-gone", pod: "nb-0", value: 0})
	eventually(t, src, "ws-gone", idle)
	honorFalse.remove("ws-gone")
	time.Sleep(2 * time.Second)
	// Prometheus marks the series stale; max_over_time ignores the marker
	// and still sees the earlier samples.
	eventually(t, src, "ws-gone", idle)
	// A series without the namespace label (dcgm-exporter without its
	// Kubernetes mapping) names no workspace: unknown, never idle.
	honorFalse.set("ws-unmapped", gpuSeries{metric: activity.DefaultGPUMetric, namespace: "", pod: "", value: 0})
	eventually(t, src, "ws-unmapped", unknown)
}

// TestPrometheusSourceMIG: MIG devices report no DCGM_FI_DEV_GPU_UTIL;
// DCGM_FI_PROF_GR_ENGINE_ACTIVE, a ratio in [0, 1], is read in percent.
func TestPrometheusSourceMIG(t *testing.T) {
	src := &activity.Prometheus{URL: prometheusURL, Metric: "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
	honorFalse.set("ws-mig-busy", gpuSeries{metric: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", namespace: "ws-mig-busy", pod: "nb-0", value: 0.42})
	honorFalse.set("ws-mig-idle", gpuSeries{metric: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", namespace: "ws-mig-idle", pod: "nb-0", value: 0.01})
	eventually(t, src, "ws-mig-busy", active)
	eventually(t, src, "ws-mig-idle", idle) // 1% is under the default threshold of 5%
	// The default metric knows nothing of MIG devices.
	eventually(t, &activity.Prometheus{URL: prometheusURL}, "ws-mig-busy", unknown)
}

// TestPrometheusSourceDownOrSlow: a Prometheus that is not there, or
// answers slower than the probe's timeout, is an error, never an idle
// reading.
func TestPrometheusSourceDownOrSlow(t *testing.T) {
	g := NewWithT(t)
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	_, _, err := observe(&activity.Prometheus{URL: url}, "ws-busy-false")
	g.Expect(err).To(HaveOccurred())

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	start := time.Now()
	_, _, err = observe(&activity.Prometheus{URL: slow.URL, Timeout: 500 * time.Millisecond}, "ws-busy-false")
	g.Expect(err).To(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}
