package queueview

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

func TestMainRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"--server", "https://x", "extra"}, {"--server", "https://x", "-o", "yaml"}, {"--no-such-flag"}} {
		g := NewWithT(t)
		var out, errOut bytes.Buffer
		g.Expect(Main(args, &out, &errOut)).To(Equal(2), "%v", args)
		g.Expect(out.String()).To(BeEmpty())
	}
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	g.Expect(Main([]string{"-h"}, &out, &errOut)).To(Equal(0))
	g.Expect(errOut.String()).To(ContainSubstring("Usage: apiary queue"))
}

func TestAskNeedsAToken(t *testing.T) {
	g := NewWithT(t)
	_, err := Ask(context.Background(), &rest.Config{Host: "https://api"}, "https://queue", "", true, "a")
	g.Expect(err).To(MatchError(ContainSubstring("no bearer token")))
}

func TestTable(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	PrintTable(&out, []Place{{Name: "w", Reason: "QuotaExceeded", QueuedAt: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), Queues: []Queue{
		{Kind: QuotaQueue, Name: "team", Position: 3, Length: 9, AheadInNamespace: []string{"a"}, AheadElsewhere: 1}}}, {Name: "v", Reason: "Insufficient"}})
	g.Expect(out.String()).To(MatchRegexp(`w\s+QuotaExceeded\s+0\s+2026-12-07T09:00:00Z\s+TenantQuota team\s+3/9\s+a and 1 of other namespaces`))
	g.Expect(out.String()).To(MatchRegexp(`v\s+Insufficient\s+0\s+\S+\s+-\s+-\s+-`))
}
