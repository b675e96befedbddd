package shard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/internal/shard"
)

// replica is one apiary manager process of one shard, built from this
// repository and run against the management control plane with the shard's
// flags. Its log goes to a file; its trace lines (internal/shard EnvTrace)
// go to the test's recorder, and the child caches it starts are recorded.
type replica struct {
	t            testing.TB
	name         string
	index, count int
	rec          *recorder
	metricsAddr  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
	// caches are the child clusters ("ns/name") this replica started a
	// cache of.
	caches map[string]bool
}

// startReplica starts replica name of shard index of count; it is stopped
// (SIGTERM) when the test ends, unless stopped or killed before.
func startReplica(t testing.TB, rec *recorder, name string, index, count int) *replica {
	t.Helper()
	log, err := os.Create(filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, name: name, index: index, count: count, rec: rec, log: log, metricsAddr: freeAddr(t),
		caches: map[string]bool{}}
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+r.metricsAddr,
		"--health-probe-bind-address=0",
		"--crd-check-interval=1s",
		"--gpu-inventory-interval=1m",
		"--leader-election-namespace="+leaseNamespace,
		"--shards="+strconv.Itoa(count),
		"--shard="+strconv.Itoa(index),
		"--zap-log-level=debug",
	)
	cmd.Env = append(os.Environ(), shard.EnvTrace+"=1")
	cmd.Stdout = log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	go r.follow(stderr)
	t.Cleanup(func() {
		r.Stop()
		_ = log.Close()
	})
	return r
}

// follow copies the log, hands trace lines to the recorder and notes the
// child caches started.
func (r *replica) follow(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, shard.TraceMarker); ok {
			r.rec.add(r.name, r.index, rest)
			continue
		}
		r.mu.Lock()
		fmt.Fprintln(r.log, line)
		if strings.Contains(line, `"starting child cluster cache"`) {
			r.caches[clusterOfLogLine(line)] = true
		}
		r.mu.Unlock()
	}
	_ = r.cmd.Wait()
	close(r.exited)
}

// clusterOfLogLine reads the cluster field of a JSON log line.
func clusterOfLogLine(line string) string {
	var entry struct {
		Cluster json.RawMessage `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		return "unparsed: " + line
	}
	var nn struct{ Namespace, Name string }
	if err := json.Unmarshal(entry.Cluster, &nn); err == nil && nn.Name != "" {
		return nn.Namespace + "/" + nn.Name
	}
	var s string
	if err := json.Unmarshal(entry.Cluster, &s); err == nil {
		return s
	}
	return string(entry.Cluster)
}

// Caches returns the child clusters this replica started caches of.
func (r *replica) Caches() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.caches))
	for k := range r.caches {
		out[k] = true
	}
	return out
}

// Kill ends the replica as a crash does: its Lease stays until it lapses.
func (r *replica) Kill() { r.end(syscall.SIGKILL) }

// Stop ends the replica gracefully: it releases its Lease.
func (r *replica) Stop() { r.end(syscall.SIGTERM) }

func (r *replica) end(sig syscall.Signal) {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-r.exited
	}
	r.rec.ended(r.name)
	r.mu.Lock()
	r.cmd = nil
	r.mu.Unlock()
}

// freeAddr is a loopback address with a port free at the time of asking.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
