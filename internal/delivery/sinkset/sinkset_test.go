package sinkset

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// loop is a sink whose loop runs until its context ends and that sends
// the notices put into it.
type loop struct {
	key     string
	notices chan event.GenericEvent
	running chan struct{}
	stopped chan struct{}
}

func newLoop(key string) *loop {
	return &loop{key: key, notices: make(chan event.GenericEvent), running: make(chan struct{}), stopped: make(chan struct{})}
}

func (l *loop) Start(ctx context.Context) error {
	close(l.running)
	<-ctx.Done()
	close(l.stopped)
	return nil
}

func (l *loop) Subscribe(string) <-chan event.GenericEvent { return l.notices }

func TestSet(t *testing.T) {
	g := NewWithT(t)
	made := map[string]int{}
	set := &Set[string, *loop]{New: func(_ context.Context, key string) (*loop, error) {
		made[key]++
		if key == "broken" {
			return nil, errors.New("no clone")
		}
		return newLoop(key), nil
	}}

	early, cancelEarly := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelEarly()
	_, err := set.Get(early, "a")
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "before the set starts, Get waits as long as its context allows")
	g.Expect(made).To(BeEmpty())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := set.Subscribe("Workspace") // subscribed before any sink exists
	go func() { _ = set.Start(ctx) }()

	a, err := set.Get(ctx, "a")
	g.Expect(err).NotTo(HaveOccurred())
	again, _ := set.Get(ctx, "a")
	g.Expect(again).To(BeIdenticalTo(a), "one sink per key")
	g.Expect(made["a"]).To(Equal(1))
	g.Eventually(a.running).Should(BeClosed(), "a sink runs once made")

	_, err = set.Get(ctx, "broken")
	g.Expect(err).To(MatchError("no clone"))
	_, err = set.Get(ctx, "broken")
	g.Expect(err).To(HaveOccurred())
	g.Expect(made["broken"]).To(Equal(2), "a failed make is tried again")
	_, ok := set.Lookup("broken")
	g.Expect(ok).To(BeFalse())

	go func() { a.notices <- event.GenericEvent{} }()
	g.Eventually(before).Should(Receive(), "notices of a sink made after Subscribe reach it")
	b, _ := set.Get(ctx, "b")
	g.Expect(set.Subscribe("Workspace")).To(BeIdenticalTo(before), "one channel per kind")
	go func() { b.notices <- event.GenericEvent{} }()
	g.Eventually(before).Should(Receive())

	set.Remove("a")
	g.Expect(a.stopped).To(BeClosed(), "Remove returns once the sink's loop has")
	_, ok = set.Lookup("a")
	g.Expect(ok).To(BeFalse())
	fresh, _ := set.Get(ctx, "a")
	g.Expect(fresh).NotTo(BeIdenticalTo(a), "a removed key gets a new sink")
	set.Remove("never made")

	cancel()
	g.Eventually(b.stopped).Should(BeClosed(), "every sink stops with the set")
}
