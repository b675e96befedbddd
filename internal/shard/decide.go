package shard

import (
	"fmt"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Action is what a shard does with a unit.
type Action int

const (
	// Skip: another shard's unit; do nothing, write nothing.
	Skip Action = iota
	// Act: this shard holds the unit (or the unit has no holder object yet
	// and is this shard's): reconcile it.
	Act
	// Claim: no shard holds this shard's unit; write the claim, then act.
	Claim
	// TakeOver: this shard's unit is held by a shard whose Lease is not
	// held, or the claim is garbage; overwrite the claim, then act.
	TakeOver
	// Wait: this shard's unit is held by a live shard; wait until it
	// releases the unit or its Lease lapses.
	Wait
	// Release: this shard holds a unit that belongs to another shard; let
	// the reconciles in flight finish, then remove the claim.
	Release
)

func (a Action) String() string {
	switch a {
	case Act:
		return "Act"
	case Claim:
		return "Claim"
	case TakeOver:
		return "TakeOver"
	case Wait:
		return "Wait"
	case Release:
		return "Release"
	default:
		return "Skip"
	}
}

// The reasons of a workspace's ShardAssigned condition, when False.
const (
	// ReasonHandOver: the unit is held by another shard, which is to hand it
	// over (it drains and releases it, or its Lease lapses).
	ReasonHandOver = workspacesv1.ShardHandOverReason
	// ReasonMismatch: the unit is held by a shard this replica's
	// configuration does not know (an index not below its number of
	// shards) whose Lease is still held: the shards run with different
	// numbers of shards.
	ReasonMismatch = workspacesv1.ShardMismatchReason
)

// State is what a shard knows of a unit when it decides.
type State struct {
	// HolderExists is false while the holder object does not exist (a
	// workspace targeting a ClusterDeployment no one created yet).
	HolderExists bool
	// Holder is the value of HolderAnnotation on the holder object.
	Holder string
	// HolderAlive reports whether the Lease of the holder's shard is held
	// (only read when another shard holds the unit).
	HolderAlive bool
}

// Decision is what to do with a unit, and for Wait why.
type Decision struct {
	Action Action
	// Desired is the unit's desired shard.
	Desired int
	// Reason and Message explain a Wait.
	Reason, Message string
}

// Decide is the rule every shard follows for a unit, so that at most one
// shard acts on it at a time:
//
//	holder        desired = me                     desired ≠ me
//	none          Claim                            Skip
//	me            Act                              Release (after draining)
//	other, live   Wait                             Skip
//	other, lapsed TakeOver                         Skip
//	garbage       TakeOver                         Skip
//	no object     Act (nothing to claim)           Skip
func Decide(c Config, u Unit, s State) Decision {
	if !c.Enabled() {
		return Decision{Action: Act}
	}
	d := Decision{Desired: Desired(u.Key(), c.Shards)}
	mine := d.Desired == c.Index
	if !s.HolderExists {
		if mine {
			d.Action = Act
		}
		return d
	}
	holder, err := ParseHolder(s.Holder)
	switch {
	case err != nil:
		if mine {
			d.Action = TakeOver
		}
	case holder == c.Index:
		d.Action = Act
		if !mine {
			d.Action = Release
		}
	case !mine:
		d.Action = Skip
	case holder == NoHolder:
		d.Action = Claim
	case !s.HolderAlive:
		d.Action = TakeOver
	case holder >= c.Shards:
		d.Action, d.Reason = Wait, ReasonMismatch
		d.Message = fmt.Sprintf("%s belongs to shard %d of %d but is held by shard %d, which this configuration does not have "+
			"and whose Lease %s is held: the shards run with different numbers of shards", u, d.Desired, c.Shards, holder, LeaseName(holder))
	default:
		d.Action, d.Reason = Wait, ReasonHandOver
		d.Message = fmt.Sprintf("%s belongs to shard %d of %d and is held by shard %d, which hands it over once its reconciles "+
			"of it finish, or once its Lease %s lapses", u, d.Desired, c.Shards, holder, LeaseName(holder))
	}
	return d
}
