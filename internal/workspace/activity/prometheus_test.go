package activity

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// fakePrometheus answers /prefix/api/v1/query with answer, recording the queries.
type fakePrometheus struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
	answer  func(w http.ResponseWriter)
}

func startPrometheus(t *testing.T, answer func(w http.ResponseWriter)) *fakePrometheus {
	t.Helper()
	p := &fakePrometheus{answer: answer}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/prefix/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		p.queries = append(p.queries, r.URL.Query())
		p.mu.Unlock()
		p.answer(w)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *fakePrometheus) last() url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries[len(p.queries)-1]
}

func gpuTarget() Target {
	return Target{Cluster: types.NamespacedName{Namespace: "team-a", Name: "cd-1"}, Namespace: "ws-nb", Format: PrometheusGPU, Window: 30 * time.Minute}
}

func TestPrometheusSource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	value := "12"
	prom := startPrometheus(t, func(w http.ResponseWriter) {
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1764763200,"` + value + `"]}]}}`))
	})
	src := &Prometheus{URL: prom.URL + "/prefix/", Client: prom.Client()}

	obs, err := src.Observe(ctx, gpuTarget(), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs).To(Equal(Observation{LastActivity: now, Known: true, Detail: "GPU utilisation up to 12% over 30m (threshold 5%)"}))
	q := prom.last()
	g.Expect(q.Get("query")).To(Equal(`max(max_over_time(DCGM_FI_DEV_GPU_UTIL{namespace="ws-nb"}[1800s]) or max_over_time(DCGM_FI_DEV_GPU_UTIL{exported_namespace="ws-nb"}[1800s]))`))
	g.Expect(q.Get("time")).To(Equal(strconv.FormatInt(now.Unix(), 10) + ".000"))

	value = "3"
	obs, err = src.Observe(ctx, gpuTarget(), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.Known).To(BeTrue())
	g.Expect(obs.LastActivity).To(Equal(now.Add(-30 * time.Minute)))

	withCluster := &Prometheus{URL: prom.URL + "/prefix", Client: prom.Client(), Metric: "gpu_util", NamespaceLabel: "exported_namespace", ClusterLabel: "cluster", Threshold: 2}
	obs, err = withCluster.Observe(ctx, gpuTarget(), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.LastActivity).To(Equal(now), "3% is at least the threshold of 2%")
	g.Expect(prom.last().Get("query")).To(Equal(`max(max_over_time(gpu_util{exported_namespace="ws-nb",cluster="cd-1"}[1800s]))`))
}

func TestPrometheusQueryQuotesLabelValues(t *testing.T) {
	g := NewWithT(t)
	src := &Prometheus{ClusterLabel: "cluster"}
	tgt := gpuTarget()
	tgt.Namespace = `ws-"}[5m]) or vector(100) #` + "\n"
	tgt.Cluster.Name = `a\b`
	q, err := src.Query(tgt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(q).To(Equal(`max(max_over_time(DCGM_FI_DEV_GPU_UTIL{namespace="ws-\"}[5m]) or vector(100) #\n",cluster="a\\b"}[1800s]) or ` +
		`max_over_time(DCGM_FI_DEV_GPU_UTIL{exported_namespace="ws-\"}[5m]) or vector(100) #\n",cluster="a\\b"}[1800s]))`))

	mig := &Prometheus{Metric: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", NamespaceLabel: "namespace"}
	q, err = mig.Query(gpuTarget())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(q).To(Equal(`100 * max(max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace="ws-nb"}[1800s]))`), "a ratio metric is read in percent")

	for name, bad := range map[string]struct {
		src Prometheus
		t   func(*Target)
	}{
		"label name":   {src: Prometheus{NamespaceLabel: `ns"`}},
		"cluster name": {src: Prometheus{ClusterLabel: "a b"}},
		"metric":       {src: Prometheus{Metric: "gpu{x}"}},
		"no namespace": {t: func(t *Target) { t.Namespace = "" }},
		"short window": {t: func(t *Target) { t.Window = 59 * time.Second }},
		"long window":  {t: func(t *Target) { t.Window = 32 * 24 * time.Hour }},
	} {
		tgt := gpuTarget()
		if bad.t != nil {
			bad.t(&tgt)
		}
		_, err := bad.src.Query(tgt)
		g.Expect(err).To(HaveOccurred(), name)
	}
}

func TestPrometheusSourceFailures(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		answer func(w http.ResponseWriter)
		want   string
	}{
		"no series": {answer: func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
		}},
		"query error": {want: "HTTP 400: prometheus answer: query failed: error type bad_data", answer: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"1:2: parse error"}`))
		}},
		"HTML from a proxy": {want: "HTTP 502: prometheus answer: malformed answer", answer: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
		}},
		"empty error": {want: "prometheus: HTTP 503", answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }},
		"success with an error status": {want: "prometheus: HTTP 500", answer: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"50"]}]}}`))
		}},
		"too large": {want: "answer too large", answer: func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(" ", MaxBody) + `]}}`))
		}},
		"slow": {want: "timed out", answer: func(w http.ResponseWriter) { time.Sleep(time.Second) }},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			prom := startPrometheus(t, c.answer)
			src := &Prometheus{URL: prom.URL + "/prefix", Timeout: 300 * time.Millisecond}
			start := time.Now()
			obs, err := src.Observe(ctx, gpuTarget(), now)
			g.Expect(time.Since(start)).To(BeNumerically("<", 900*time.Millisecond))
			if c.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(obs.Known).To(BeFalse())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(c.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("parse error"))
			g.Expect(err.Error()).NotTo(ContainSubstring("bad gateway"))
		})
	}

	g := NewWithT(t)
	_, err := (&Prometheus{URL: "prometheus:9090"}).Observe(ctx, gpuTarget(), now)
	g.Expect(err).To(MatchError(ContainSubstring("not an absolute http(s) URL")))
	for _, bad := range []float64{-1, 100.5, math.NaN(), math.Inf(1)} {
		_, err := (&Prometheus{URL: "http://prometheus:9090", Threshold: bad}).Observe(ctx, gpuTarget(), now)
		g.Expect(err).To(MatchError(ContainSubstring("outside (0, 100]")), "threshold %g", bad)
	}
}
