package controllertest

import (
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// switchClock is the manager's one clock in these tests: the lifecycle's
// skewed wall clock (lifecycleNow, see SkewClock), or a fake clock while a
// test holds one (UseFakeClock).
type switchClock struct {
	mu   sync.Mutex
	fake *clocktesting.FakePassiveClock
}

var _ clock.PassiveClock = &switchClock{}

// suiteClock is the clock the suite's manager is given.
var suiteClock = &switchClock{}

func (c *switchClock) Now() time.Time {
	c.mu.Lock()
	fake := c.fake
	c.mu.Unlock()
	if fake != nil {
		return fake.Now()
	}
	return lifecycleNow()
}

func (c *switchClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// UseFakeClock makes a fake clock, set at start, the manager's until the
// test ends; the tests of a package run one at a time.
func UseFakeClock(t *testing.T, start time.Time) *clocktesting.FakePassiveClock {
	fake := clocktesting.NewFakePassiveClock(start)
	suiteClock.mu.Lock()
	suiteClock.fake = fake
	suiteClock.mu.Unlock()
	t.Cleanup(func() {
		suiteClock.mu.Lock()
		suiteClock.fake = nil
		suiteClock.mu.Unlock()
	})
	return fake
}
