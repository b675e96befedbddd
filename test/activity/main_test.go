// Package activity_test runs the idle policies' activity sources against the
// real parts users run: a Prometheus server (Debian's prometheus package)
// scraping, once a second, an exporter in this test that serves DCGM
// exporter's GPU metrics with its labels, under both honor_labels settings;
// and Debian's Jupyter server, in a network namespace of the test's own,
// asked through a real API server's Service proxy as the manager asks a
// child cluster. .ci/run installs both; without them the suite fails, saying
// so.
package activity_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/test/world"
)

// prometheusURL is the running Prometheus's HTTP API.
var prometheusURL string

// exporters serve the DCGM metrics Prometheus scrapes: honorFalse under a
// job with honor_labels: false and a target namespace label (the exporter's
// own namespace, as Kubernetes service discovery sets it), honorTrue under
// one with honor_labels: true.
var honorFalse, honorTrue = &exporter{}, &exporter{}

// exporter serves DCGM exporter's text format: one series per GPU.
type exporter struct {
	mu     sync.Mutex
	series map[string]gpuSeries
}

// gpuSeries is one GPU's sample, with the pod DCGM's Kubernetes mode maps it to.
type gpuSeries struct {
	metric, namespace, pod string
	value                  float64
}

func (e *exporter) set(key string, s gpuSeries) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.series == nil {
		e.series = map[string]gpuSeries{}
	}
	e.series[key] = s
}

func (e *exporter) remove(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.series, key)
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	keys := make([]string, 0, len(e.series))
	for k := range e.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		s := e.series[k]
		// The labels of dcgm-exporter 3.x in Kubernetes mode.
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s{gpu=\"%d\",UUID=\"GPU-%s\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\",DCGM_FI_DRIVER_VERSION=\"550.54.15\",container=\"notebook\",namespace=%q,pod=%q} %g\n",
			s.metric, s.metric, i, k, i, s.namespace, s.pod, s.value)
	}
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// TestMain starts Prometheus, scraping the two exporters, in the world's
// work folder.
func TestMain(m *testing.M) { world.Main(m, world.World{Name: "activity"}, startPrometheus) }

func startPrometheus(r *world.Running) error {
	bin := os.Getenv("APIARY_PROMETHEUS")
	if bin == "" {
		bin, _ = exec.LookPath("prometheus")
	}
	if bin == "" {
		return errors.New("test/activity needs Prometheus: `apt-get install prometheus` (.ci/run does), or set APIARY_PROMETHEUS")
	}
	dir := r.Dir
	a, b := httptest.NewServer(honorFalse), httptest.NewServer(honorTrue)
	r.Defer(a.Close)
	r.Defer(b.Close)
	port, err := freePort()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
- job_name: dcgm-honor-false
  honor_labels: false
  static_configs:
  - targets: [%q]
    labels: {namespace: gpu-operator, pod: nvidia-dcgm-exporter-x}
- job_name: dcgm-honor-true
  honor_labels: true
  static_configs:
  - targets: [%q]
    labels: {namespace: gpu-operator, pod: nvidia-dcgm-exporter-y}
`, strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://"))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--query.lookback-delta=5s")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting Prometheus: %w", err)
	}
	r.Defer(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	prometheusURL = "http://" + listen
	if err := waitReady(prometheusURL, 30*time.Second); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		return fmt.Errorf("Prometheus did not become ready: %w\n%s", err, log)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(base string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
