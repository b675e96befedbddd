package shard

import (
	"fmt"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		fail bool
	}{
		{Config{}, false},
		{Config{Index: 0, Shards: 1}, false},
		{Config{Index: 2, Shards: 3}, false},
		{Config{Index: 3, Shards: 3}, true},
		{Config{Index: 1, Shards: 0}, true},
		{Config{Index: -1, Shards: 2}, true},
		{Config{Index: 0, Shards: -2}, true},
		{Config{Index: 0, Shards: Buckets}, false},
		{Config{Index: 0, Shards: Buckets + 1}, true},
	} {
		t.Run(fmt.Sprintf("%d-of-%d", tc.c.Index, tc.c.Shards), func(t *testing.T) {
			g := NewWithT(t)
			if tc.fail {
				g.Expect(tc.c.Validate()).To(HaveOccurred())
			} else {
				g.Expect(tc.c.Validate()).To(Succeed())
			}
		})
	}
}

func TestLeaseNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(LeaseName(3)).To(Equal("apiary-shard-3"))
	for i := range 20 {
		got, ok := LeaseIndex(LeaseName(i))
		g.Expect(ok).To(BeTrue())
		g.Expect(got).To(Equal(i))
	}
	for _, name := range []string{"apiary-shard-", "apiary-shard-x", "apiary-shard-01", "apiary-shard--1", "apiary.infra.exalsius.ai"} {
		_, ok := LeaseIndex(name)
		g.Expect(ok).To(BeFalse(), name)
	}
}

func TestParseHolder(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		fail bool
	}{
		{"", NoHolder, false},
		{"0", 0, false},
		{"12", 12, false},
		{"-1", NoHolder, true},
		{"01", NoHolder, true},
		{"one", NoHolder, true},
		{" 1", NoHolder, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseHolder(tc.in)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(err != nil).To(Equal(tc.fail))
		})
	}
}

// TestDesiredIsStable pins a few assignments: a change of the hash would
// move every unit of a running installation.
func TestDesiredIsStable(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Desired("anything", 0)).To(Equal(0))
	g.Expect(Desired("anything", 1)).To(Equal(0))
	got := map[string][]int{}
	for _, key := range []string{"team-a/colony", "team-b/gpu-cluster", "default/cd-1"} {
		for n := 2; n <= 4; n++ {
			got[key] = append(got[key], Desired(key, n))
		}
	}
	g.Expect(got).To(Equal(map[string][]int{
		"team-a/colony":      {0, 0, 3},
		"team-b/gpu-cluster": {1, 2, 2},
		"default/cd-1":       {1, 1, 1},
	}))
	g.Expect([]int{Bucket("team-a/colony"), Bucket("team-b/gpu-cluster"), Bucket("default/cd-1")}).To(Equal([]int{109, 221, 102}))
}

// TestDesiredSpreadsAndMovesLittle checks the properties sharding relies on:
// every key has exactly one shard in range, shards get about as many keys
// each, and a shard added moves about 1/(N+1) of the keys, all of them to
// the new shard.
func TestDesiredSpreadsAndMovesLittle(t *testing.T) {
	const keys = 20000
	for n := 1; n <= 8; n++ {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			g := NewWithT(t)
			count := make([]int, n)
			moved := 0
			for k := range keys {
				key := fmt.Sprintf("ns-%d/colony-%d", k%37, k)
				before, after := Desired(key, n), Desired(key, n+1)
				g.Expect(before).To(BeNumerically(">=", 0))
				g.Expect(before).To(BeNumerically("<", max(n, 1)))
				count[before]++
				if before != after {
					moved++
					g.Expect(after).To(Equal(n), "a key moved to an old shard")
				}
			}
			for i := range n {
				g.Expect(count[i]).To(BeNumerically("~", keys/n, keys/n/10), "shard %d", i)
			}
			want := keys / (n + 1)
			g.Expect(moved).To(BeNumerically("~", want, want/10))
		})
	}
}

func TestUnitOfCluster(t *testing.T) {
	cd := types.NamespacedName{Namespace: "team", Name: "prod-gpu"}
	colonies := []ColonyClusters{{Name: "dev", Clusters: []string{"dev-a"}}, {Name: "prod", Clusters: []string{"prod-cpu", "prod-gpu"}}}
	for _, tc := range []struct {
		name     string
		owner    string
		colonies []ColonyClusters
		want     Unit
	}{
		{"owner labels", "prod", nil, Unit{KindColony, types.NamespacedName{Namespace: "team", Name: "prod"}}},
		{"owner labels win over a listing", "other", colonies, Unit{KindColony, types.NamespacedName{Namespace: "team", Name: "other"}}},
		{"listed by a Colony before it exists", "", colonies, Unit{KindColony, types.NamespacedName{Namespace: "team", Name: "prod"}}},
		{"no Colony", "", colonies[:1], Unit{KindClusterDeployment, cd}},
		{"nothing", "", nil, Unit{KindClusterDeployment, cd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(UnitOfCluster(cd, tc.owner, tc.colonies)).To(Equal(tc.want))
		})
	}
}

func TestDecide(t *testing.T) {
	u := Unit{KindColony, types.NamespacedName{Namespace: "team", Name: "prod"}}
	const n = 3
	me := Desired(u.Key(), n)
	other := (me + 1) % n
	mine, theirs := Config{Index: me, Shards: n}, Config{Index: other, Shards: n}
	hold := func(i int) string { return FormatHolder(i) }
	for _, tc := range []struct {
		name   string
		c      Config
		s      State
		want   Action
		reason string
	}{
		{"off", Config{}, State{HolderExists: true, Holder: "7"}, Act, ""},
		{"mine, unclaimed", mine, State{HolderExists: true}, Claim, ""},
		{"mine, held by me", mine, State{HolderExists: true, Holder: hold(me)}, Act, ""},
		{"mine, held by a live shard", mine, State{HolderExists: true, Holder: hold(other), HolderAlive: true}, Wait, ReasonHandOver},
		{"mine, held by a lapsed shard", mine, State{HolderExists: true, Holder: hold(other)}, TakeOver, ""},
		{"mine, held by a live unknown shard", mine, State{HolderExists: true, Holder: hold(n + 2), HolderAlive: true}, Wait, ReasonMismatch},
		{"mine, held by a lapsed unknown shard", mine, State{HolderExists: true, Holder: hold(n + 2)}, TakeOver, ""},
		{"mine, garbage claim", mine, State{HolderExists: true, Holder: "x"}, TakeOver, ""},
		{"mine, no holder object", mine, State{}, Act, ""},
		{"theirs, unclaimed", theirs, State{HolderExists: true}, Skip, ""},
		{"theirs, held by me", theirs, State{HolderExists: true, Holder: hold(other)}, Release, ""},
		{"theirs, held by them", theirs, State{HolderExists: true, Holder: hold(me), HolderAlive: true}, Skip, ""},
		{"theirs, garbage claim", theirs, State{HolderExists: true, Holder: "x"}, Skip, ""},
		{"theirs, no holder object", theirs, State{}, Skip, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(tc.c, u, tc.s)
			g.Expect(d.Action).To(Equal(tc.want), d.Action.String())
			g.Expect(d.Reason).To(Equal(tc.reason))
			if tc.reason != "" {
				g.Expect(d.Message).To(ContainSubstring(u.String()))
			}
		})
	}
}

// FuzzDecide checks that, whatever the claim and the Leases, at most one
// shard acts on a unit: every shard of every configuration seeing one state
// acts only when it holds the unit (or nobody can hold it yet and it is the
// desired shard of its configuration), and only the desired shard of a
// configuration claims or takes over.
func FuzzDecide(f *testing.F) {
	f.Add("team/prod", "", true, true, uint8(3), uint8(4))
	f.Add("team/prod", "1", true, false, uint8(2), uint8(3))
	f.Add("a/b", "7", true, true, uint8(4), uint8(2))
	f.Add("a/b", "x", false, false, uint8(1), uint8(5))
	f.Fuzz(func(t *testing.T, key, holder string, exists, alive bool, n1, n2 uint8) {
		u := Unit{Kind: KindColony, NamespacedName: types.NamespacedName{Namespace: "ns", Name: key}}
		s := State{HolderExists: exists, Holder: holder, HolderAlive: alive}
		h, herr := ParseHolder(holder)
		for _, n := range []int{int(n1%16) + 2, int(n2%16) + 2} {
			acting := 0
			for i := range n {
				c := Config{Index: i, Shards: n}
				d := Decide(c, u, s)
				if d.Desired < 0 || d.Desired >= n {
					t.Fatalf("desired shard %d out of 0..%d", d.Desired, n-1)
				}
				switch d.Action {
				case Act:
					acting++
					if exists && (herr != nil || h != i) {
						t.Fatalf("shard %d of %d acts on a unit held by %q", i, n, holder)
					}
					if !exists && d.Desired != i {
						t.Fatalf("shard %d of %d acts on shard %d's unit without holder", i, n, d.Desired)
					}
				case Claim, TakeOver:
					acting++
					if d.Desired != i || !exists {
						t.Fatalf("shard %d of %d claims shard %d's unit", i, n, d.Desired)
					}
					if d.Action == Claim && holder != "" {
						t.Fatalf("shard %d claims a unit held by %q", i, holder)
					}
					if d.Action == TakeOver && herr == nil && (alive || h == NoHolder || h == i) {
						t.Fatalf("shard %d takes over a unit held by %q (alive %v)", i, holder, alive)
					}
				case Release:
					if herr != nil || h != i || d.Desired == i {
						t.Fatalf("shard %d releases a unit held by %q", i, holder)
					}
				case Wait:
					if d.Reason == "" || d.Desired != i {
						t.Fatalf("shard %d waits without a reason, or for shard %d's unit", i, d.Desired)
					}
				}
			}
			if acting > 1 {
				t.Fatalf("%d shards of %d act on %s held by %q", acting, n, u, holder)
			}
		}
	})
}
