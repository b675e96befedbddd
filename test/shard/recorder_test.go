package shard_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recorder collects, from every replica's trace, when a reconcile started
// and stopped acting on a unit, and checks that the acting intervals of
// different processes never overlap on one unit. The trace is printed by
// the shard gate at the moments it counts a reconcile in and out, so an
// overlap here is two processes acting on one unit at once.
type recorder struct {
	mu sync.Mutex
	// open counts, per replica and unit, the reconciles in flight and when
	// the first of them entered.
	open map[string]map[string]*openSpan
	// spans are the closed acting intervals.
	spans []span
	// bad are trace lines that did not parse.
	bad []string
}

type openSpan struct {
	n     int
	start time.Time
	index int
}

type span struct {
	replica    string
	index      int
	unit       string
	start, end time.Time
}

func newRecorder() *recorder { return &recorder{open: map[string]map[string]*openSpan{}} }

// add records one trace line: "<enter|exit> <unit key> <kind> <unix ns>".
func (r *recorder) add(replica string, index int, line string) {
	f := strings.Fields(line)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(f) != 4 {
		r.bad = append(r.bad, replica+": "+line)
		return
	}
	ns, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		r.bad = append(r.bad, replica+": "+line)
		return
	}
	at, unit := time.Unix(0, ns), f[2]+" "+f[1]
	units := r.open[replica]
	if units == nil {
		units = map[string]*openSpan{}
		r.open[replica] = units
	}
	o := units[unit]
	switch f[0] {
	case "enter":
		if o == nil {
			o = &openSpan{start: at, index: index}
			units[unit] = o
		}
		o.n++
	case "exit":
		if o == nil {
			r.bad = append(r.bad, replica+": exit without enter: "+line)
			return
		}
		if o.n--; o.n == 0 {
			r.spans = append(r.spans, span{replica: replica, index: index, unit: unit, start: o.start, end: at})
			delete(units, unit)
		}
	}
}

// ended closes the open intervals of a replica that stopped or was killed:
// they end no later than now.
func (r *recorder) ended(replica string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for unit, o := range r.open[replica] {
		r.spans = append(r.spans, span{replica: replica, index: o.index, unit: unit, start: o.start, end: now})
	}
	delete(r.open, replica)
}

// snapshot is every interval so far, open ones ending now.
func (r *recorder) snapshot() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]span(nil), r.spans...)
	now := time.Now()
	for replica, units := range r.open {
		for unit, o := range units {
			out = append(out, span{replica: replica, index: o.index, unit: unit, start: o.start, end: now})
		}
	}
	return out
}

// overlaps lists every pair of intervals of different replicas on one unit
// that overlap in time.
func (r *recorder) overlaps() []string {
	byUnit := map[string][]span{}
	for _, s := range r.snapshot() {
		byUnit[s.unit] = append(byUnit[s.unit], s)
	}
	var out []string
	for unit, spans := range byUnit {
		sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
		for i := range spans {
			for j := i + 1; j < len(spans) && spans[j].start.Before(spans[i].end); j++ {
				if spans[i].replica != spans[j].replica {
					out = append(out, fmt.Sprintf("%s: %s acted %s–%s while %s acted %s–%s", unit,
						spans[i].replica, spans[i].start.Format("15:04:05.000000"), spans[i].end.Format("15:04:05.000000"),
						spans[j].replica, spans[j].start.Format("15:04:05.000000"), spans[j].end.Format("15:04:05.000000")))
				}
			}
		}
	}
	return out
}

// actors are the shard indexes that acted on each unit since after.
func (r *recorder) actors(after time.Time) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for _, s := range r.snapshot() {
		if s.end.Before(after) {
			continue
		}
		if out[s.unit] == nil {
			out[s.unit] = map[int]bool{}
		}
		out[s.unit][s.index] = true
	}
	return out
}

// problems are the trace lines that did not parse.
func (r *recorder) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}
