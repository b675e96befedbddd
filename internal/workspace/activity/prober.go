package activity

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/metrics"
)

// DefaultMaxConcurrent is the probes a Prober runs at once by default.
const DefaultMaxConcurrent = 8

// Prober asks the source of a target's format, at most MaxConcurrent at once
// and each for at most Timeout, and never fails: an error, a timeout or no
// free slot in time is an unknown Observation whose Detail says why. Every
// probe is counted (apiary_workspace_activity_probes_total) and timed
// (apiary_workspace_activity_probe_duration_seconds). A Prober must not be
// copied after its first use.
type Prober struct {
	// Sources asks each format.
	Sources map[Format]Source
	// MaxConcurrent bounds the probes in flight; default 8.
	MaxConcurrent int
	// Timeout bounds a whole Observe, the wait for a slot included; default 5s.
	Timeout time.Duration

	once  sync.Once
	slots chan struct{}
}

// Observe asks when the target was last active, at now. It returns within
// Timeout (and when ctx ends), and its Observation is never after now,
// never Known with a zero time, and carries no token.
func (p *Prober) Observe(ctx context.Context, t Target, now time.Time) Observation {
	start := time.Now()
	obs, result := p.observe(ctx, t, now)
	metrics.ObserveActivityProbe(t.Format.label(), result, time.Since(start))
	obs.Detail = safeText(obs.Detail, t.Token)
	obs.Refused = result == metrics.ActivityRefused
	return obs
}

func (p *Prober) observe(ctx context.Context, t Target, now time.Time) (Observation, string) {
	p.once.Do(func() {
		n := p.MaxConcurrent
		if n <= 0 {
			n = DefaultMaxConcurrent
		}
		p.slots = make(chan struct{}, n)
	})
	src := p.Sources[t.Format]
	if src == nil {
		return Observation{Detail: "no activity source for format " + t.Format.label()}, metrics.ActivityError
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return Observation{Detail: "not asked: every probe slot stayed busy"}, metrics.ActivityError
	}
	// The source runs on its own, so that one ignoring ctx cannot hold the
	// caller beyond the timeout; it holds its slot until it returns.
	answers := make(chan answer, 1)
	go func() {
		defer func() { <-p.slots }()
		obs, err := observeSafely(ctx, src, t, now)
		answers <- answer{obs, err}
	}()
	var obs Observation
	var err error
	select {
	case a := <-answers:
		obs, err = a.obs, a.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return Observation{Detail: refused.Error()}, metrics.ActivityRefused
	case err != nil:
		detail := childcluster.SafeError(redactErr(err, t.Token))
		timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
		if timedOut && !strings.Contains(detail, "timed out") {
			detail = "timed out: " + detail
		}
		return Observation{Detail: detail}, metrics.ActivityError
	case !obs.Known || obs.LastActivity.Before(minValid):
		return Observation{Detail: obs.Detail}, metrics.ActivityUnknown
	case obs.LastActivity.After(now):
		obs.LastActivity = now
	}
	return obs, metrics.ActivityKnown
}

type answer struct {
	obs Observation
	err error
}

// observeSafely asks src, turning a panic of a pluggable source into an error.
func observeSafely(ctx context.Context, src Source, t Target, now time.Time) (obs Observation, err error) {
	defer func() {
		if r := recover(); r != nil {
			obs, err = Observation{}, errors.New("the activity source panicked")
		}
	}()
	return src.Observe(ctx, t, now)
}

// redactErr returns err, or when its text holds the token, a plain error of
// that text with the token redacted: SafeError then cuts a text that no
// longer holds it, at the cost of reducing API statuses no further.
func redactErr(err error, token string) error {
	if msg := err.Error(); redact(msg, token) != msg {
		return errors.New(redact(msg, token))
	}
	return err
}
