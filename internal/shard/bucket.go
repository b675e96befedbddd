package shard

import (
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// BucketLabel is set on every workspace, and on the ServiceSets and
// Secrets Apiary delivers for a workspace, to the bucket of the workspace's
// unit. A shard's cache selects the buckets it desires (and the objects
// without a valid bucket), so that it holds only its own units' workspaces.
// Only written when sharding is on.
const BucketLabel = "shard.apiary.exalsius.ai/bucket"

// Buckets is the number of buckets units are hashed into. Fixed: changing
// it would move every unit and relabel every workspace.
const Buckets = 256

// Bucket is the bucket of a unit key: its FNV-1a-64 hash modulo Buckets.
func Bucket(key string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum64() % Buckets)
}

// BucketValue is the value of BucketLabel for the unit key.
func BucketValue(key string) string { return FormatBucket(Bucket(key)) }

// FormatBucket is the value of BucketLabel for bucket b.
func FormatBucket(b int) string { return strconv.Itoa(b) }

// ParseBucket reads a value of BucketLabel; ok is false unless it is the
// canonical form of a bucket (FormatBucket).
func ParseBucket(v string) (int, bool) {
	b, err := strconv.Atoi(v)
	if err != nil || b < 0 || b >= Buckets || FormatBucket(b) != v {
		return 0, false
	}
	return b, true
}

// DesiredOfBucket is the shard bucket b belongs to among shards. Without
// sharding it is 0. The assignment is consistent and balanced: with n
// shards every shard has ⌊Buckets/n⌋ or one more buckets, and going from n
// to n+1 shards moves only the buckets the new shard gets, taken from each
// old shard's surplus (a pseudo-random but fixed choice). A jump hash of
// the bucket would move as little but leave shards up to ±20 % apart at
// 256 buckets.
func DesiredOfBucket(b, shards int) int {
	if shards <= 1 || b < 0 || b >= Buckets {
		return 0
	}
	return assignment(shards)[b]
}

var (
	assignmentsMu sync.Mutex
	assignments   = map[int][]int{}
)

// assignment is the shard of every bucket among shards, built by adding
// shards one at a time from one shard.
func assignment(shards int) []int {
	assignmentsMu.Lock()
	defer assignmentsMu.Unlock()
	if a, ok := assignments[shards]; ok {
		return a
	}
	a := make([]int, Buckets)
	for n := 1; n < shards; n++ {
		// Going from n to n+1 shards: each old shard i keeps target(i, n+1)
		// of its buckets and gives the others to shard n.
		byShard := make([][]int, n)
		for b, s := range a {
			byShard[s] = append(byShard[s], b)
		}
		for i, bs := range byShard {
			sort.Slice(bs, func(x, y int) bool { return rank(bs[x], n) < rank(bs[y], n) })
			for _, b := range bs[target(i, n+1):] {
				a[b] = n
			}
		}
	}
	assignments[shards] = a
	return a
}

// target is how many buckets shard i has among n shards.
func target(i, n int) int {
	t := Buckets / n
	if i < Buckets%n {
		t++
	}
	return t
}

// rank orders a shard's buckets when the (n+1)-th shard is added: the
// highest ranked move.
func rank(b, n int) uint64 { return mix(uint64(b)<<16 | uint64(n)) }

// BucketsOf lists the buckets shard index desires among shards, in order.
func BucketsOf(index, shards int) []int {
	var out []int
	for b := range Buckets {
		if DesiredOfBucket(b, shards) == index {
			out = append(out, b)
		}
	}
	return out
}

// OwnSelector selects the objects whose bucket shard c desires. Nil
// without sharding.
func (c Config) OwnSelector() labels.Selector {
	if !c.Enabled() {
		return nil
	}
	return bucketSelector(selection.In, BucketsOf(c.Index, c.Shards))
}

// UnbucketedSelector selects the objects without a valid bucket: without
// BucketLabel, or with a value that is no bucket (a set-based notin also
// matches objects without the key). Every shard caches them, so that a new
// workspace, or one whose label a tenant broke, is seen by the shard that
// must label it.
func UnbucketedSelector() labels.Selector {
	all := make([]int, Buckets)
	for b := range all {
		all[b] = b
	}
	return bucketSelector(selection.NotIn, all)
}

func bucketSelector(op selection.Operator, buckets []int) labels.Selector {
	values := make([]string, 0, len(buckets))
	for _, b := range buckets {
		values = append(values, FormatBucket(b))
	}
	req, err := labels.NewRequirement(BucketLabel, op, values)
	if err != nil {
		// The values are canonical bucket numbers, always valid label values.
		panic("shard: bucket selector: " + err.Error())
	}
	return labels.NewSelector().Add(*req)
}

// HasBucket reports whether labels carry a valid bucket: an object without
// one is cached by every shard, by its unbucketed informer.
func HasBucket(labels map[string]string) bool {
	_, ok := ParseBucket(labels[BucketLabel])
	return ok
}

// DesiresBucket reports whether shard c caches objects labelled with v:
// v is a bucket c desires. Always true without sharding.
func (c Config) DesiresBucket(v string) bool {
	if !c.Enabled() {
		return true
	}
	b, ok := ParseBucket(v)
	return ok && DesiredOfBucket(b, c.Shards) == c.Index
}

// Relabel is what a workspace's labels need so that the shard desiring its
// unit caches it: the value of BucketLabel to write, and whether the
// current labels lack it. Without sharding nothing is written.
func (c Config) Relabel(u Unit, current map[string]string) (string, bool) {
	if !c.Enabled() {
		return "", false
	}
	want := BucketValue(u.Key())
	return want, current[BucketLabel] != want
}

// describeBuckets is a short form of a bucket list for logs.
func describeBuckets(bs []int) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		parts = append(parts, FormatBucket(b))
	}
	return strings.Join(parts, ",")
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
