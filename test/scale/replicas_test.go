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

// reconciles adds up the replicas' workspace reconciles.
func (rs replicas) reconciles(b *testing.B) float64 {
	t := 0.0
	for _, m := range rs {
		t += m.reconciles(b)
	}
	return t
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

// total is the replicas' requests to every host.
func (rs replicas) total(b *testing.B) float64 {
	t := 0.0
	for _, v := range rs.requests(b) {
		t += v
	}
	return t
}

// settle waits until the replicas made no request for quiet, apart from
// background requests at rate per second (the Lease renewals of shards,
// which never stop).
func (rs replicas) settle(b *testing.B, quiet, limit time.Duration, rate float64) {
	b.Helper()
	deadline := time.Now().Add(limit)
	last, since := rs.total(b), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		n := rs.total(b)
		switch {
		case n-last > rate*time.Since(since).Seconds()+2:
			last, since = n, time.Now()
		case time.Since(since) >= quiet:
			return
		}
	}
}

// leaseRate measures the replicas' requests per second over window while
// nothing else is asked of them: with shards, each one's Lease renewals;
// zero for a single replica without leader election. The benchmark takes
// that rate times the rollout's duration off the requests it reports.
func (rs replicas) leaseRate(b *testing.B, window time.Duration) float64 {
	if len(rs) < 2 {
		return 0
	}
	start, before := time.Now(), rs.total(b)
	time.Sleep(window)
	return (rs.total(b) - before) / time.Since(start).Seconds()
}
