package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/usage"
)

// collectUsage reports a quota's usage counters: what its status counted
// and what its workspaces' charges hold now (usage.Now).
func (c *stateCollector) collectUsage(ch chan<- prometheus.Metric, q *quotav1alpha1.TenantQuota,
	members []quota.Member, now time.Time) {
	u := usage.Now(q.Status.Usage, quota.HeldUsage(q, members), now)
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		v = c.counted.atLeast(string(q.UID), d, v, labels)
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, g := range u.GPUs {
		counter(c.tenantGPUSeconds, float64(g.Seconds), q.Name, g.ResourceName, g.Model)
	}
	var cpu, memory float64
	if u.CPU != nil {
		cpu = u.CPU.AsApproximateFloat64()
	}
	if u.Memory != nil {
		memory = u.Memory.AsApproximateFloat64()
	}
	counter(c.tenantCPUSeconds, cpu, q.Name)
	counter(c.tenantMemorySeconds, memory, q.Name)
}

// monotone remembers the last value of each counter series.
type monotone struct {
	mu   sync.Mutex
	last map[string]float64
}

// atLeast returns v, or the series' last value when that is higher, and
// remembers the result. A quota deleted and created again under its name
// (another UID) starts again.
func (m *monotone) atLeast(uid string, d *prometheus.Desc, v float64, labels []string) float64 {
	key := uid + "\x00" + d.String()
	for _, l := range labels {
		key += "\x00" + l
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]float64{}
	}
	if last, ok := m.last[key]; ok && last > v {
		v = last
	}
	m.last[key] = v
	return v
}
