package notice

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestNoticesCoalesceAndNeverBlock: notices of one object queued before
// anyone reads collapse into one, other kinds go nowhere, and the sender
// returns at once.
func TestNoticesCoalesceAndNeverBlock(t *testing.T) {
	g := NewWithT(t)
	var b Board
	ch := b.Subscribe("Colony")
	g.Expect(b.Subscribe("Colony")).To(Equal(ch), "one channel per kind")
	a, c := Key{Kind: "Colony", Namespace: "ns", Name: "a"}, Key{Kind: "Colony", Namespace: "ns", Name: "c"}
	done := make(chan struct{})
	go func() {
		for range 100 {
			b.Notify(map[Key]bool{a: true, {Kind: "Other", Name: "x"}: true})
		}
		b.Notify(map[Key]bool{c: true})
		close(done)
	}()
	g.Eventually(done).Should(BeClosed(), "Notify never waits for a reader")
	// One notice of a may be in flight when the others are queued: a is
	// delivered at most twice, c once.
	seen := map[string]int{}
	timeout := time.After(5 * time.Second)
	for seen["ns/c"] == 0 {
		select {
		case e := <-ch:
			seen[e.Object.GetNamespace()+"/"+e.Object.GetName()]++
		case <-timeout:
			t.Fatalf("got %v", seen)
		}
	}
	g.Consistently(ch).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
	g.Expect(seen["ns/a"]).To(BeNumerically("<=", 2), "a hundred notices of a coalesced")
	g.Expect(seen["ns/a"]).To(BeNumerically(">=", 1))
	g.Expect(seen).To(HaveLen(2), "no other kind")
}
