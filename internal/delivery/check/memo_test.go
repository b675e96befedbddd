package check

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestMemo(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	refused := &RefusedError{Object: "Secret ns/values", Err: errors.New("too large")}
	m := NewMemo(10*time.Minute, 2)

	m.Record("a.yaml", []byte("v1"), refused, now)
	g.Expect(m.Refused("a.yaml", []byte("v1"), now.Add(time.Minute))).To(MatchError(refused), "the same content is refused from memory")
	g.Expect(m.Refused("a.yaml", []byte("v2"), now)).To(Succeed(), "changed content is checked again")
	g.Expect(m.Refused("b.yaml", []byte("v1"), now)).To(Succeed(), "another key is not refused")
	g.Expect(m.Refused("a.yaml", []byte("v1"), now.Add(10*time.Minute))).To(Succeed(), "a refusal is forgotten after the TTL")

	m.Record("a.yaml", []byte("v1"), fmt.Errorf("timeout"), now)
	g.Expect(m.Refused("a.yaml", []byte("v1"), now)).To(Succeed(), "an error that is not a refusal is tried again")
	g.Expect(m.Len()).To(Equal(0))

	m.Record("a.yaml", []byte("v1"), refused, now)
	m.Record("a.yaml", []byte("v1"), nil, now)
	g.Expect(m.Refused("a.yaml", []byte("v1"), now)).To(Succeed(), "content that passed forgets its refusal")

	for i := range 5 {
		m.Record(fmt.Sprintf("f%d.yaml", i), []byte("x"), refused, now)
		g.Expect(m.Len()).To(BeNumerically("<=", 2), "the memo is bounded")
	}
	g.Expect(m.Refused("f4.yaml", []byte("x"), now)).To(MatchError(refused), "the newest refusal is kept when the memo starts anew")
	m.Record("f4.yaml", []byte("y"), refused, now)
	g.Expect(m.Len()).To(Equal(1), "a key already held is replaced, not counted again")
}
