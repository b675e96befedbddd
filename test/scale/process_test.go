package scale_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/test/world"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// manager is the apiary manager running as a process of its own
// (world.Process).
type manager struct {
	*world.Process
	metrics, pprof, prob string
	// peakRSS, peakAnon and peakFile are the largest resident set, its
	// largest anonymous part (heap, stacks) and its largest file-backed
	// part (the binary's pages), sampled.
	peakRSS, peakAnon, peakFile atomic.Int64
	// peakProfile, when set, is where the sampler saves a heap profile
	// (without forcing a GC) each time the resident set reaches a new peak,
	// at most every five seconds: what the heap held near the peak.
	peakProfile string
	stop        chan struct{}
}

// startManager runs the manager with its metrics, probes and profiles on
// free local ports, and waits until it is ready (its caches synced).
// Its log is logName in the work folder, or, with APIARY_SCALE_MANAGER_LOG,
// that path followed by logName.
func startManager(b *testing.B, logName string, args ...string) *manager {
	b.Helper()
	m := &manager{metrics: freeAddr(b), pprof: freeAddr(b), prob: freeAddr(b), stop: make(chan struct{})}
	// The manager's own defaults, not the world's: what is measured is
	// what an operator runs.
	m.Process = &world.Process{Binary: clusters.Binary, LogPath: filepath.Join(workDir, logName), Args: append([]string{
		"--kubeconfig", clusters.Kubeconfig,
		"--metrics-bind-address", m.metrics,
		"--health-probe-bind-address", m.prob,
		"--pprof-bind-address", m.pprof,
	}, args...)}
	if p := os.Getenv("APIARY_SCALE_MANAGER_LOG"); p != "" {
		m.LogPath = p + "." + logName
	}
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.kill)
	m.peakProfile = os.Getenv("APIARY_SCALE_PEAK_PROFILE")
	go m.sample()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + m.prob + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the manager is not ready within two minutes; see %s", m.LogPath)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (m *manager) kill() {
	select {
	case <-m.stop:
		return
	default:
		close(m.stop)
	}
	m.Kill()
}

// sample records the process's resident set every 100ms.
func (m *manager) sample() {
	var profiled time.Time
	for {
		if rss := m.rss("VmRSS"); rss > m.peakRSS.Load() {
			m.peakRSS.Store(rss)
			if m.peakProfile != "" && time.Since(profiled) > 5*time.Second {
				profiled = time.Now()
				_ = m.saveProfile(m.peakProfile, false)
			}
		}
		if anon := m.rss("RssAnon"); anon > m.peakAnon.Load() {
			m.peakAnon.Store(anon)
		}
		if file := m.rss("RssFile"); file > m.peakFile.Load() {
			m.peakFile.Store(file)
		}
		select {
		case <-m.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rss reads a field of /proc/<pid>/status in bytes: VmRSS now, RssAnon
// and RssFile its anonymous and file-backed parts, VmHWM the kernel's own
// high-water mark.
func (m *manager) rss(field string) int64 { return m.Status(field) }

// cpuSeconds is the CPU time the manager used so far, user and system.
func (m *manager) cpuSeconds() float64 { return m.CPUSeconds() }

// requests returns the manager's API requests so far by host
// (rest_client_requests_total, client-go's own count).
func (m *manager) requests(b *testing.B) map[string]float64 {
	b.Helper()
	families := m.scrape(b)
	out := map[string]float64{}
	if f := families["rest_client_requests_total"]; f != nil {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "host" {
					out[l.GetValue()] += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// reconciles is how many times the manager reconciled workspaces so far
// (controller_runtime_reconcile_total of the workspacedeployment
// controller, every result).
func (m *manager) reconciles(b *testing.B) float64 {
	b.Helper()
	n := 0.0
	if f := m.scrape(b)["controller_runtime_reconcile_total"]; f != nil {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "workspacedeployment" {
					n += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// scrape reads the manager's metrics.
func (m *manager) scrape(b *testing.B) map[string]*dto.MetricFamily {
	b.Helper()
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return families
}

// heapProfile saves the manager's heap profile (after a GC) to path, and
// beside it (path + ".txt") the same profile in text, which ends with the
// runtime's MemStats: what the heap, its free spans and the stacks take.
func (m *manager) heapProfile(b *testing.B, path string) {
	b.Helper()
	if err := m.saveProfile(path, true); err != nil {
		b.Fatal(err)
	}
	if err := m.save("/debug/pprof/heap?debug=1", path+".txt"); err != nil {
		b.Fatal(err)
	}
}

// saveProfile saves the manager's heap profile to path, after a GC if gc.
func (m *manager) saveProfile(path string, gc bool) error {
	if gc {
		return m.save("/debug/pprof/heap?gc=1", path)
	}
	return m.save("/debug/pprof/heap", path)
}

// save writes what the manager's pprof server answers at query to path.
func (m *manager) save(query, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.pprof+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func freeAddr(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// hostOf is the host:port client-go labels requests to a server with.
func hostOf(b *testing.B, server string) string {
	b.Helper()
	u, err := url.Parse(server)
	if err != nil {
		b.Fatal(err)
	}
	return u.Host
}
