package activity

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// sourceFunc is a Source of a function.
type sourceFunc func(ctx context.Context, t Target, now time.Time) (Observation, error)

func (f sourceFunc) Observe(ctx context.Context, t Target, now time.Time) (Observation, error) {
	return f(ctx, t, now)
}

// probes returns apiary_workspace_activity_probes_total of a source and result.
func probes(g Gomega, source, result string) float64 {
	fams, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range fams {
		if f.GetName() != "apiary_workspace_activity_probes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["source"] == source && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestProberBoundsProbesInFlight(t *testing.T) {
	g := NewWithT(t)
	var inFlight, most atomic.Int32
	src := sourceFunc(func(ctx context.Context, _ Target, now time.Time) (Observation, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(30 * time.Millisecond)
		return Observation{LastActivity: now.Add(-time.Minute), Known: true}, nil
	})
	p := &Prober{Sources: map[Format]Source{CodeServerHealthz: src}, MaxConcurrent: 3, Timeout: 10 * time.Second}
	before := probes(g, "CodeServerHealthz", "known")
	var wg sync.WaitGroup
	results := make([]Observation, 20)
	for i := range results {
		wg.Go(func() { results[i] = p.Observe(context.Background(), Target{Format: CodeServerHealthz}, now) })
	}
	wg.Wait()
	g.Expect(most.Load()).To(Equal(int32(3)), "at most MaxConcurrent, and the bound is reached")
	for _, obs := range results {
		g.Expect(obs.Known).To(BeTrue())
	}
	g.Expect(probes(g, "CodeServerHealthz", "known") - before).To(Equal(20.0))
}

func TestProberGivesUnknownWhenNoSlotIsFree(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	src := sourceFunc(func(ctx context.Context, _ Target, now time.Time) (Observation, error) {
		<-release
		return Observation{LastActivity: now, Known: true}, nil
	})
	p := &Prober{Sources: map[Format]Source{JupyterStatus: src}, MaxConcurrent: 1, Timeout: 200 * time.Millisecond}
	before := probes(g, "JupyterStatus", "error")

	first := p.Observe(context.Background(), Target{Format: JupyterStatus}, now)
	g.Expect(first.Known).To(BeFalse(), "a source that ignores ctx does not hold the caller")
	g.Expect(first.Detail).To(ContainSubstring("timed out"))
	start := time.Now()
	second := p.Observe(context.Background(), Target{Format: JupyterStatus}, now)
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
	g.Expect(second).To(Equal(Observation{Detail: "not asked: every probe slot stayed busy"}), "the first source still holds the only slot")
	g.Expect(probes(g, "JupyterStatus", "error") - before).To(Equal(2.0))

	close(release)
	g.Eventually(func() bool { return p.Observe(context.Background(), Target{Format: JupyterStatus}, now).Known }).Should(BeTrue(), "the slot is free once the source returns")
}

func TestProberTimeoutIsUnknown(t *testing.T) {
	g := NewWithT(t)
	src := sourceFunc(func(ctx context.Context, _ Target, _ time.Time) (Observation, error) {
		<-ctx.Done()
		return Observation{}, ctx.Err()
	})
	p := &Prober{Sources: map[Format]Source{PrometheusGPU: src}, Timeout: 100 * time.Millisecond}
	start := time.Now()
	obs := p.Observe(context.Background(), Target{Format: PrometheusGPU}, now)
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
	g.Expect(obs.Known).To(BeFalse())
	g.Expect(obs.LastActivity).To(BeZero())
	g.Expect(obs.Detail).To(HavePrefix("timed out"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	obs = p.Observe(ctx, Target{Format: PrometheusGPU}, now)
	g.Expect(obs.Known).To(BeFalse(), "a cancelled reconcile asks nothing")
}

func TestProberNormalisesWhatSourcesSay(t *testing.T) {
	g := NewWithT(t)
	var answer Observation
	var answerErr error
	src := sourceFunc(func(context.Context, Target, time.Time) (Observation, error) { return answer, answerErr })
	p := &Prober{Sources: map[Format]Source{JupyterStatus: src}}
	observe := func(o Observation, err error) Observation {
		answer, answerErr = o, err
		return p.Observe(context.Background(), Target{Format: JupyterStatus, Token: token}, now)
	}

	g.Expect(observe(Observation{LastActivity: now.Add(time.Hour), Known: true, Detail: "d"}, nil)).
		To(Equal(Observation{LastActivity: now, Known: true, Detail: "d"}), "the future is now")
	g.Expect(observe(Observation{Known: true, Detail: "zero"}, nil)).To(Equal(Observation{Detail: "zero"}), "known without a time is unknown")
	g.Expect(observe(Observation{Known: true, LastActivity: time.Unix(1, 0)}, nil).Known).To(BeFalse())
	g.Expect(observe(Observation{LastActivity: now}, nil)).To(Equal(Observation{}), "a time that is not known is dropped")
	g.Expect(observe(Observation{LastActivity: now, Known: true}, errors.New("failed"))).
		To(Equal(Observation{Detail: "failed"}), "an error wins over what came with it")

	long := observe(Observation{Known: true, LastActivity: now, Detail: strings.Repeat("é", 300) + "\x00\n"}, nil)
	g.Expect(len(long.Detail)).To(BeNumerically("<=", MaxDetail))
	g.Expect(long.Detail).To(HaveSuffix("…"))

	answer, answerErr = Observation{}, nil
	obs := p.Observe(context.Background(), Target{Format: "Carrier pigeon"}, now)
	g.Expect(obs).To(Equal(Observation{Detail: "no activity source for format other"}))

	panicking := &Prober{Sources: map[Format]Source{JupyterStatus: sourceFunc(func(context.Context, Target, time.Time) (Observation, error) {
		panic(token)
	})}}
	obs = panicking.Observe(context.Background(), Target{Format: JupyterStatus, Token: token}, now)
	g.Expect(obs).To(Equal(Observation{Detail: "the activity source panicked"}))
}

func TestProberNeverShowsTheToken(t *testing.T) {
	g := NewWithT(t)
	leaky := sourceFunc(func(_ context.Context, t Target, _ time.Time) (Observation, error) {
		return Observation{}, &url.Error{Op: "Get", URL: "https://child/api?token=" + url.QueryEscape(t.Token),
			Err: errors.New("refused by " + t.Token + " and " + url.PathEscape(t.Token) + "\x1b[0m")}
	})
	chatty := sourceFunc(func(_ context.Context, t Target, now time.Time) (Observation, error) {
		return Observation{LastActivity: now, Known: true, Detail: "token " + t.Token}, nil
	})
	echo := startProxy(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(r.URL.String()))
	})
	slow := startProxy(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	for name, src := range map[string]Source{"leaky error": leaky, "chatty detail": chatty, "echoing endpoint": echo.source(""), "slow endpoint": slow.source("")} {
		p := &Prober{Sources: map[Format]Source{JupyterStatus: src}, Timeout: 200 * time.Millisecond}
		obs := p.Observe(context.Background(), jupyterTarget(), now)
		g.Expect(obs.Detail).NotTo(BeEmpty(), name)
		for _, form := range []string{token, url.QueryEscape(token), url.PathEscape(token), "odd=chars"} {
			g.Expect(obs.Detail).NotTo(ContainSubstring(form), name)
		}
		g.Expect(obs.Detail).NotTo(ContainSubstring("\x1b"), name)
	}
}
