// Package shard splits Apiary's work between replicas. The unit of work is a
// ClusterDeployment with everything that depends on it: a Colony and all its
// clusters form one unit (keyed by the Colony), a ClusterDeployment no
// Colony renders is a unit of its own, and every workspace belongs to the
// unit of the ClusterDeployment it targets. Keeping a cluster's workspaces
// together keeps the GPU gate, the prerequisite installs and the child
// caches of a cluster in one process.
//
// A unit's desired shard is a jump consistent hash of the FNV-1a-64 hash of
// its key over the number of shards, as kube-state-metrics shards: stable,
// and growing the shards by one moves about 1/(N+1) of the units, all to the
// new shard. Which shard acts on a unit is recorded on its holder object
// (the Colony, or the ClusterDeployment) in HolderAnnotation, written with
// the object's resourceVersion as precondition, so that two shards never
// hold a unit at once: a shard claims a unit that no one holds, drains and
// releases one it holds but no longer wants, and takes over one whose
// holder's leader-election Lease is no longer held. Decide is that rule as a
// pure function; Gate applies it in a process.
package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
)

// HolderAnnotation is set on a unit's holder object (a Colony, or a
// ClusterDeployment no Colony renders) to the index of the shard that acts
// on the unit.
const HolderAnnotation = "shard.apiary.exalsius.ai/holder"

// LeasePrefix starts the name of every shard's leader-election Lease.
const LeasePrefix = "apiary-shard-"

// Config says which shard a process is. The zero value and Shards == 1
// turn sharding off.
type Config struct {
	// Index is this process's shard, 0 ≤ Index < Shards.
	Index int
	// Shards is the number of shards; 0 or 1 is no sharding.
	Shards int
}

// Enabled reports whether work is split between shards.
func (c Config) Enabled() bool { return c.Shards > 1 }

// Validate checks that Index is one of the Shards.
func (c Config) Validate() error {
	switch {
	case c.Shards < 0:
		return fmt.Errorf("the number of shards %d is negative", c.Shards)
	case c.Index < 0:
		return fmt.Errorf("the shard index %d is negative", c.Index)
	case c.Index >= max(c.Shards, 1):
		return fmt.Errorf("the shard index %d is not below the number of shards %d", c.Index, max(c.Shards, 1))
	}
	return nil
}

// LeaseName is the leader-election Lease of shard i. It does not depend on
// the number of shards, so that a process of one configuration and one of
// another with the same index never run at once.
func LeaseName(i int) string { return LeasePrefix + strconv.Itoa(i) }

// LeaseIndex is the shard index of a Lease named by LeaseName.
func LeaseIndex(name string) (int, bool) {
	if len(name) <= len(LeasePrefix) || name[:len(LeasePrefix)] != LeasePrefix {
		return 0, false
	}
	i, err := strconv.Atoi(name[len(LeasePrefix):])
	if err != nil || i < 0 || strconv.Itoa(i) != name[len(LeasePrefix):] {
		return 0, false
	}
	return i, true
}

// Desired is the shard a unit key belongs to among shards: a jump
// consistent hash of the key's FNV-1a-64 hash. Without sharding it is 0.
func Desired(key string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return jump(h.Sum64(), shards)
}

// jump is Lamping and Veach's jump consistent hash ("A Fast, Minimal Memory,
// Consistent Hash Algorithm", 2014): the bucket of key among buckets.
func jump(key uint64, buckets int) int {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// ErrInvalidHolder is returned by ParseHolder for an annotation that is no
// shard index.
var ErrInvalidHolder = errors.New("the shard holder annotation is not a shard index")

// NoHolder is the holder of a unit that no shard holds.
const NoHolder = -1

// ParseHolder reads the value of HolderAnnotation: NoHolder when empty.
func ParseHolder(v string) (int, error) {
	if v == "" {
		return NoHolder, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || strconv.Itoa(i) != v {
		return NoHolder, fmt.Errorf("%w: %q", ErrInvalidHolder, v)
	}
	return i, nil
}

// FormatHolder is the value of HolderAnnotation for shard i.
func FormatHolder(i int) string { return strconv.Itoa(i) }
