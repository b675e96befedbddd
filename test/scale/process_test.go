package scale_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// manager is the apiary manager running as a process of its own.
type manager struct {
	cmd                  *exec.Cmd
	metrics, pprof, prob string
	// peakRSS and peakAnon are the largest resident set and its anonymous
	// part (heap, stacks; not the binary's file pages), sampled.
	peakRSS, peakAnon atomic.Int64
	stop              chan struct{}
}

// startManager runs the manager with its metrics, probes and profiles on
// free local ports, and waits until it is ready (its caches synced).
func startManager(b *testing.B, args ...string) *manager {
	b.Helper()
	m := &manager{metrics: freeAddr(b), pprof: freeAddr(b), prob: freeAddr(b), stop: make(chan struct{})}
	log, err := os.Create(filepath.Join(workDir, "manager.log"))
	if err != nil {
		b.Fatal(err)
	}
	m.cmd = exec.Command(binary, append([]string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", m.metrics,
		"--health-probe-bind-address", m.prob,
		"--pprof-bind-address", m.pprof,
	}, args...)...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	if err := m.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.kill)
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
			b.Fatalf("the manager is not ready within two minutes; see %s", log.Name())
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
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
}

// sample records the process's resident set every 100ms.
func (m *manager) sample() {
	for {
		if rss := m.rss("VmRSS"); rss > m.peakRSS.Load() {
			m.peakRSS.Store(rss)
		}
		if anon := m.rss("RssAnon"); anon > m.peakAnon.Load() {
			m.peakAnon.Store(anon)
		}
		select {
		case <-m.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rss reads a field of /proc/<pid>/status in bytes: VmRSS now, RssAnon
// its anonymous part, VmHWM the kernel's own high-water mark.
func (m *manager) rss(field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// requests returns the manager's API requests so far by host
// (rest_client_requests_total, client-go's own count).
func (m *manager) requests(b *testing.B) map[string]float64 {
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

// heapProfile saves the manager's heap profile (after a GC) to path.
func (m *manager) heapProfile(b *testing.B, path string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.pprof+"/debug/pprof/heap?gc=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
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
