package queueview

import (
	"fmt"
	"testing"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// BenchmarkPlaces is one request for the places of a namespace of 20
// waiting workspaces, among 10,000 workspaces over 500 clusters and 100
// namespaces (half of them waiting, a fifth for quota), under 10 quotas:
//
//	go test ./internal/queueview -run '^$' -bench Places -benchmem
func BenchmarkPlaces(b *testing.B) {
	var all []*workspacesv1.WorkspaceDeployment
	for i := range 10000 {
		reason := workspacesv1.WaitingBehindOlderReason
		if i%5 == 0 {
			reason = "quota"
		}
		w := waiter(fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("w-%d", i), fmt.Sprintf("c-%d", i%500), i, int32(i%3)*100, reason)
		if i%2 == 1 {
			w.Status.Phase = workspacesv1.PhaseRunning
		}
		all = append(all, w)
	}
	var quotas []TenantQuota
	for q := range 10 {
		quotas = append(quotas, TenantQuota{Name: fmt.Sprintf("q-%d", q), Selects: func(ns string) bool { return len(ns)%10 == q }})
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Places("ns-42", all, quotas)) == 0 {
			b.Fatal("no places")
		}
	}
}
