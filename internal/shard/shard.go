// Package shard splits Apiary's work between replicas. The unit of work is a
// ClusterDeployment with everything that depends on it: a Colony and all its
// clusters form one unit (keyed by the Colony), a ClusterDeployment no
// Colony renders is a unit of its own, and every workspace belongs to the
// unit of the ClusterDeployment it targets. Keeping a cluster's workspaces
// together keeps the GPU gate, the prerequisite installs and the child
// caches of a cluster in one process.
//
// A unit's key is hashed (FNV-1a-64) into one of Buckets buckets, and a
// bucket's desired shard is a consistent assignment of buckets to
// shards (DesiredOfBucket): stable, balanced to one bucket, and growing the
// shards by one moves about 1/(N+1) of the buckets, all to the new shard. Workspaces
// and the objects delivered for them carry their unit's bucket in
// BucketLabel, so that each shard caches only its own buckets' objects. Which shard acts on a unit is recorded on its holder object
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
	case c.Shards > Buckets:
		return fmt.Errorf("the number of shards %d is above %d, the number of buckets units are hashed into", c.Shards, Buckets)
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

// Desired is the shard a unit key belongs to among shards: the shard of
// its bucket (DesiredOfBucket of Bucket), so that a shard's cache can select
// its units' objects by the bucket label. Without sharding it is 0.
func Desired(key string, shards int) int {
	return DesiredOfBucket(Bucket(key), shards)
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
