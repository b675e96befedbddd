package quota

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

var fuzzSelectors = []map[string]string{nil, h100, {"exalsius.ai/gpu-model": "A100"}, {"pool": "x"}, {"pool": "x", "exalsius.ai/gpu-model": "H100"}}

// FuzzCheck: Check refuses a charge exactly on the limits it asks more of
// than the workspace's earlier charge and that would end above hard once
// it is added: an accepted growth never takes a limit over hard.
// go test ./internal/quota -run '^$' -fuzz FuzzCheck -fuzztime 60s
func FuzzCheck(f *testing.F) {
	f.Add([]byte{3, 8, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{0, 0, 0, 0, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{data: data}
		hard := quotav1alpha1.QuotaLimits{}
		if b := r.next(); b%2 == 1 {
			hard.Workspaces = ptr.To(int64(b % 7))
		}
		for i := range int(r.next() % 4) {
			l := quotav1alpha1.GPULimit{Name: fmt.Sprintf("l%d", i), Count: int64(r.next() % 12)}
			switch r.next() % 4 {
			case 1:
				l.GPUModel = "H100"
			case 2:
				l.NodeSelector = map[string]string{"pool": "x"}
			case 3:
				l.ResourceName = "amd.com/gpu"
			}
			hard.GPUs = append(hard.GPUs, l)
		}
		if b := r.next(); b%2 == 1 {
			hard.CPU = resource.NewMilliQuantity(int64(b)*100, resource.DecimalSI)
		}
		mk := func(i int) quotav1alpha1.QuotaCharge {
			c := charge("ns", fmt.Sprintf("w%d", r.next()%10), int64(r.next()%6), fuzzSelectors[int(r.next())%len(fuzzSelectors)])
			if r.next()%3 == 0 {
				c.ResourceName = "amd.com/gpu"
			}
			if b := r.next(); b%2 == 0 {
				c.CPU = resource.NewMilliQuantity(int64(b)*10, resource.DecimalSI)
			}
			return c
		}
		var ledger []quotav1alpha1.QuotaCharge
		for i := range int(r.next() % 8) {
			ledger = Upsert(ledger, mk(i))
		}
		c := mk(99)
		q := tenantQuota(hard, ledger...)
		excess := Check(q, Find(ledger, c.UID), c)
		after := Usage(hard, Upsert(ledger, c))
		mine := Usage(hard, []quotav1alpha1.QuotaCharge{c})
		prev := Usage(hard, nil)
		old := Find(ledger, c.UID)
		if old != nil {
			prev = Usage(hard, []quotav1alpha1.QuotaCharge{*old})
		}
		// Only what grows is checked: the limits the charge asks more of
		// than the workspace's earlier charge, and that end above hard.
		var over []string
		if hard.Workspaces != nil && old == nil && after.Workspaces > *hard.Workspaces {
			over = append(over, "workspaces")
		}
		for i, l := range hard.GPUs {
			if mine.GPUs[i].Count > prev.GPUs[i].Count && after.GPUs[i].Count > l.Count {
				over = append(over, l.Name)
			}
		}
		if hard.CPU != nil && mine.CPU.Cmp(*prev.CPU) > 0 && after.CPU.Cmp(*hard.CPU) > 0 {
			over = append(over, "cpu")
		}
		if len(excess) != len(over) {
			t.Fatalf("Check says %v, adding the charge exceeds %v (hard %+v, ledger %+v, charge %+v)", excess, over, hard, ledger, c)
		}
	})
}

type byteReader struct{ data []byte }

func (r *byteReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}
