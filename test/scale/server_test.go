package scale_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// server is a control plane as its API server counts what it serves: its
// requests (apiserver_request_total, watches included), the time it spent
// serving them (apiserver_request_duration_seconds), the watch events it
// sent, and the CPU time of its kube-apiserver and etcd processes.
type server struct {
	name string
	cfg  *rest.Config
	hc   *http.Client
	// apiserver and etcd are the pids of its processes, 0 when not found.
	apiserver, etcd int
}

// newServer finds the processes of the control plane that cfg reaches:
// the kube-apiserver whose --secure-port is cfg's port, and the etcd
// listening where its --etcd-servers points.
func newServer(b *testing.B, name string, cfg *rest.Config) *server {
	b.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := &server{name: name, cfg: cfg, hc: hc}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	procs := cmdlines()
	var etcdURL string
	for pid, args := range procs {
		if filepath.Base(args[0]) == "kube-apiserver" && flagOf(args, "secure-port") == u.Port() {
			s.apiserver, etcdURL = pid, flagOf(args, "etcd-servers")
		}
	}
	for pid, args := range procs {
		if etcdURL != "" && filepath.Base(args[0]) == "etcd" && flagOf(args, "listen-client-urls") == etcdURL {
			s.etcd = pid
		}
	}
	if s.apiserver == 0 || s.etcd == 0 {
		b.Logf("%s: kube-apiserver pid %d, etcd pid %d (0: not found, its CPU is not counted)", name, s.apiserver, s.etcd)
	}
	return s
}

// cmdlines returns the command lines of the processes this user can read.
func cmdlines() map[int][]string {
	out := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(data) == 0 {
			continue
		}
		out[pid] = strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	}
	return out
}

// flagOf returns the value of --name=value in args.
func flagOf(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// procCPU is the CPU time of a process so far, user and system, in seconds
// (/proc/<pid>/stat, in clock ticks of 1/100 s); 0 when it cannot be read.
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(utime+stime) / 100
}

// profile saves a CPU profile of the kube-apiserver over the next seconds
// to path (/debug/pprof/profile, as an administrator), in the background;
// wait for the returned channel.
func (s *server) profile(seconds int, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(s.cfg.Host, "/"), seconds), nil)
		resp, err := s.hc.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: CPU profile: %s", s.name, resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			_ = f.Close()
			done <- err
			return
		}
		done <- f.Close()
	}()
	return done
}

// serverSample is what a control plane counted up to a moment.
type serverSample struct {
	// requests are apiserver_request_total by "VERB resource[/subresource]
	// code"; seconds the sums of apiserver_request_duration_seconds by
	// "VERB resource[/subresource]"; watchEvents apiserver_watch_events_total
	// by kind; openWatches apiserver_longrunning_requests of WATCH by
	// resource (a watch is counted in requests only when it ends).
	requests, seconds, watchEvents, openWatches map[string]float64
	// apiserverCPU and etcdCPU are the processes' CPU seconds so far.
	apiserverCPU, etcdCPU float64
}

// sample scrapes the API server's /metrics as an administrator and reads
// its processes' CPU time.
func (s *server) sample(b *testing.B) serverSample {
	b.Helper()
	out := serverSample{requests: map[string]float64{}, seconds: map[string]float64{}, watchEvents: map[string]float64{},
		openWatches: map[string]float64{}, apiserverCPU: procCPU(s.apiserver), etcdCPU: procCPU(s.etcd)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(s.cfg.Host, "/")+"/metrics", nil)
	resp, err := s.hc.Do(req)
	if err != nil {
		b.Fatalf("%s: scraping /metrics: %v", s.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: scraping /metrics: %s", s.name, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatalf("%s: parsing /metrics: %v", s.name, err)
	}
	labels := func(m *dto.Metric) map[string]string {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		return l
	}
	resource := func(l map[string]string) string {
		r := l["resource"]
		if l["subresource"] != "" {
			r += "/" + l["subresource"]
		}
		return r
	}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			l := labels(m)
			out.requests[l["verb"]+" "+resource(l)+" "+l["code"]] += m.GetCounter().GetValue()
		}
	}
	if f := families["apiserver_request_duration_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			l := labels(m)
			out.seconds[l["verb"]+" "+resource(l)] += m.GetHistogram().GetSampleSum()
		}
	}
	if f := families["apiserver_watch_events_total"]; f != nil {
		for _, m := range f.GetMetric() {
			l := labels(m)
			kind := l["resource"] // "kind" before Kubernetes 1.34
			if kind == "" {
				kind = l["kind"]
			}
			out.watchEvents[kind] += m.GetCounter().GetValue()
		}
	}
	if f := families["apiserver_longrunning_requests"]; f != nil {
		for _, m := range f.GetMetric() {
			if l := labels(m); l["verb"] == "WATCH" {
				out.openWatches[resource(l)] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// serverDelta is what a control plane served between two samples.
type serverDelta struct {
	name                                        string
	requests, seconds, watchEvents, openWatches map[string]float64
	apiserverCPU, etcdCPU                       float64
}

func (a serverSample) to(name string, z serverSample) serverDelta {
	diff := func(x, y map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range y {
			if d := v - x[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	return serverDelta{name: name, requests: diff(a.requests, z.requests), seconds: diff(a.seconds, z.seconds),
		watchEvents: diff(a.watchEvents, z.watchEvents), openWatches: diff(a.openWatches, z.openWatches),
		apiserverCPU: z.apiserverCPU - a.apiserverCPU, etcdCPU: z.etcdCPU - a.etcdCPU}
}

// total is the requests served, watches ended included.
func (d serverDelta) total() float64 {
	t := 0.0
	for _, v := range d.requests {
		t += v
	}
	return t
}

// of adds up the requests whose "VERB resource code" key starts with prefix.
func (d serverDelta) of(prefix string) float64 {
	t := 0.0
	for k, v := range d.requests {
		if strings.HasPrefix(k, prefix) {
			t += v
		}
	}
	return t
}

// report prints what the control plane served per workspace: requests by
// verb, resource and code, the time spent serving them (the largest
// first), the watch events sent by kind, the watches opened and still
// open, and its processes' CPU.
func (d serverDelta) report(b *testing.B, run string, workspaces int) {
	b.Helper()
	per := func(v float64) string { return strconv.FormatFloat(v/float64(workspaces), 'f', 3, 64) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s API server: %.0f requests (%s per workspace), kube-apiserver CPU %.1f s, etcd CPU %.1f s\n",
		run, d.name, d.total(), per(d.total()), d.apiserverCPU, d.etcdCPU)
	for _, k := range sortedKeys(d.requests, false) {
		fmt.Fprintf(&sb, "  requests  %-55s %8.0f  %s/workspace\n", k, d.requests[k], per(d.requests[k]))
	}
	for _, k := range sortedKeys(d.seconds, true) {
		if strings.HasPrefix(k, "WATCH ") {
			continue // a watch's duration is how long it stayed open, not what it cost
		}
		fmt.Fprintf(&sb, "  seconds   %-55s %8.2f  %s ms/workspace\n", k, d.seconds[k], per(1000*d.seconds[k]))
	}
	for _, k := range sortedKeys(d.watchEvents, false) {
		fmt.Fprintf(&sb, "  watch events sent  %-44s %8.0f  %s/workspace\n", k, d.watchEvents[k], per(d.watchEvents[k]))
	}
	for _, k := range sortedKeys(d.openWatches, false) {
		fmt.Fprintf(&sb, "  watches still open (delta)  %-35s %8.0f\n", k, d.openWatches[k])
	}
	fmt.Print(sb.String()) // in full: a benchmark's log is cut after ten lines
}

// sortedKeys sorts m's keys by name, or by value (largest first).
func sortedKeys(m map[string]float64, byValue bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if byValue && m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
