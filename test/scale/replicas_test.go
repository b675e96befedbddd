package scale_test

import (
	"testing"
	"time"
)

// replicas are the manager processes of one run: one, or one per shard.
// Their requests, CPU time and resident sets are added up; peaks gives each
// one's own peak.
type replicas []*manager

// requests adds up the replicas' requests by host.
func (rs replicas) requests(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	for _, m := range rs {
		for host, n := range m.requests(b) {
			out[host] += n
		}
	}
	return out
}

// sum adds up a figure of every replica.
func (rs replicas) sum(figure func(*manager) int64) int64 {
	var t int64
	for _, m := range rs {
		t += figure(m)
	}
	return t
}

// cpuSeconds is the CPU time of all replicas.
func (rs replicas) cpuSeconds() float64 {
	t := 0.0
	for _, m := range rs {
		t += m.cpuSeconds()
	}
	return t
}

// peaks returns each replica's peak resident set in MiB: the largest
// sampled, or the kernel's high-water mark when that is larger.
func (rs replicas) peaks() []float64 {
	out := make([]float64, len(rs))
	for i, m := range rs {
		out[i] = float64(max(m.peakRSS.Load(), m.rss("VmHWM"))) / (1 << 20)
	}
	return out
}

func sumOf(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// settle waits until no replica made a request for quiet.
func (rs replicas) settle(b *testing.B, quiet, limit time.Duration) {
	b.Helper()
	total := func() float64 {
		t := 0.0
		for _, v := range rs.requests(b) {
			t += v
		}
		return t
	}
	deadline := time.Now().Add(limit)
	last, since := total(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if n := total(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}
