package shard

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// TestBucketsAreBalancedAndMoveLittle: with n shards every shard has
// ⌊Buckets/n⌋ or one more buckets, and adding a shard moves only the
// buckets the new shard gets.
func TestBucketsAreBalancedAndMoveLittle(t *testing.T) {
	g := NewWithT(t)
	for n := 1; n <= Buckets; n++ {
		count := make([]int, n)
		for b := range Buckets {
			s := DesiredOfBucket(b, n)
			g.Expect(s).To(BeNumerically(">=", 0))
			g.Expect(s).To(BeNumerically("<", n))
			count[s]++
			if next := DesiredOfBucket(b, n+1); next != s {
				g.Expect(next).To(Equal(n), "bucket %d moved from shard %d to an old shard going from %d shards", b, s, n)
			}
		}
		for i, c := range count {
			g.Expect(c).To(Or(Equal(Buckets/n), Equal(Buckets/n+1)), "shard %d of %d", i, n)
		}
	}
}

// TestSelectorsPartitionTheLabels: every value of the bucket label, valid,
// forged or absent, is selected by exactly one shard's own selector or by
// the selector of unbucketed objects, which every shard caches; and a
// shard's own selector holds exactly the buckets it desires.
func TestSelectorsPartitionTheLabels(t *testing.T) {
	g := NewWithT(t)
	values := []string{"", "-1", "007", "256", "1000", "x", " 3"}
	for b := range Buckets {
		values = append(values, FormatBucket(b))
	}
	for _, shards := range []int{2, 3, 4, 7} {
		for _, v := range values {
			set := labels.Set{"other": "x"}
			if v != "absent" {
				set[BucketLabel] = v
			}
			cases := []labels.Set{set, {"other": "x"}}
			for _, ls := range cases {
				seen := 0
				if UnbucketedSelector().Matches(ls) {
					seen++
				}
				for i := range shards {
					c := Config{Index: i, Shards: shards}
					if c.OwnSelector().Matches(ls) {
						seen++
						g.Expect(c.DesiresBucket(ls[BucketLabel])).To(BeTrue())
					} else {
						g.Expect(c.DesiresBucket(ls[BucketLabel])).To(BeFalse())
					}
				}
				g.Expect(seen).To(Equal(1), "labels %v among %d shards", ls, shards)
			}
		}
	}
	g.Expect(Config{Shards: 1}.OwnSelector()).To(BeNil())
	g.Expect(Config{}.DesiresBucket("x")).To(BeTrue())
}

// TestRelabel: the label a workspace needs follows its unit only, whatever
// its current labels say (a forged or stale label is corrected), and
// nothing is written without sharding.
func TestRelabel(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 2000 {
		u := Unit{Kind: KindColony, NamespacedName: types.NamespacedName{Namespace: "ns-" + strconv.Itoa(k%13), Name: fmt.Sprintf("c-%d", k)}}
		want := BucketValue(u.Key())
		current := map[string]string{}
		switch rng.IntN(3) {
		case 1:
			current[BucketLabel] = want
		case 2:
			current[BucketLabel] = FormatBucket(rng.IntN(Buckets + 10))
		}
		c := Config{Index: rng.IntN(4), Shards: 4}
		v, write := c.Relabel(u, current)
		g.Expect(v).To(Equal(want))
		g.Expect(write).To(Equal(current[BucketLabel] != want))
		// Once labelled, the unit's desired shard caches it, and only it
		// of the shards acts on the unit.
		for i := range 4 {
			c := Config{Index: i, Shards: 4}
			g.Expect(c.DesiresBucket(want)).To(Equal(Desired(u.Key(), 4) == i))
		}
		_, write = Config{Shards: 1}.Relabel(u, current)
		g.Expect(write).To(BeFalse())
	}
}
