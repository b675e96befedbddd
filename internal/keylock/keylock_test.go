package keylock

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestLocksSerialisePerKeyOnly: holders of one key never overlap, holders
// of two keys may.
func TestLocksSerialisePerKeyOnly(t *testing.T) {
	var l Locks[string]
	var inA atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock("a")
			if inA.Add(1) != 1 {
				t.Error("two holders of key a at once")
			}
			inA.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	unlockA := l.Lock("a")
	done := make(chan struct{})
	go func() { l.Lock("b")(); close(done) }()
	<-done // b is not held up by a
	unlockA()
}
