package shard_test

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/test/world"
)

// replica is one apiary manager process (world.Process) of one shard,
// built from this repository and run against the management control plane
// with the shard's flags. Its log goes to a file; its trace lines
// (internal/shard EnvTrace) go to the test's recorder, and the child caches
// it starts are recorded.
type replica struct {
	*world.Process
	name         string
	index, count int
	rec          *recorder
	metricsAddr  string

	mu sync.Mutex
	// caches are the child clusters ("ns/name") this replica started a
	// cache of.
	caches map[string]bool
}

// startReplica starts replica name of shard index of count; it is stopped
// (SIGTERM) when the test ends, unless stopped or killed before.
func startReplica(t testing.TB, rec *recorder, name string, index, count int, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, index: index, count: count, rec: rec, metricsAddr: freeAddr(t), caches: map[string]bool{}}
	args := append([]string{
		"--metrics-bind-address=" + r.metricsAddr,
		"--leader-election-namespace=" + leaseNamespace,
		"--shards=" + strconv.Itoa(count),
		"--shard=" + strconv.Itoa(index),
		"--zap-log-level=debug",
	}, extra...)
	r.Process = theWorld.NewProcess(strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log", args...)
	r.Env = []string{shard.EnvTrace + "=1"}
	r.OnLine = r.line
	if err := r.Process.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	t.Cleanup(r.Stop)
	return r
}

// line hands trace lines to the recorder (and keeps them out of the log)
// and notes the child caches started.
func (r *replica) line(line string) bool {
	if rest, ok := strings.CutPrefix(line, shard.TraceMarker); ok {
		r.rec.add(r.name, r.index, rest)
		return false
	}
	if strings.Contains(line, `"starting child cluster cache"`) {
		r.mu.Lock()
		r.caches[clusterOfLogLine(line)] = true
		r.mu.Unlock()
	}
	return true
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
func (r *replica) Kill() { r.end(r.Process.Kill) }

// Stop ends the replica gracefully: it releases its Lease.
func (r *replica) Stop() { r.end(r.Process.Stop) }

func (r *replica) end(stop func() string) {
	if r.Pid() == 0 {
		return // not running, or stopped already
	}
	stop()
	r.rec.ended(r.name)
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
