package prerequisite

import (
	"github.com/Masterminds/semver/v3"
)

// Action is what to do with the shared install of a prerequisite for one
// workspace that needs it.
type Action string

// Actions of a Verdict.
const (
	// Create: nothing installs the prerequisite yet.
	Create Action = "Create"
	// Keep: the install serves the workspace as it is.
	Keep Action = "Keep"
	// Upgrade: the install moves, in place, to the workspace's template.
	Upgrade Action = "Upgrade"
	// Refuse: the install runs a version the workspace's class refuses
	// (its versionConstraint), and it is not Apiary's to downgrade.
	Refuse Action = "Refuse"
)

// Reasons of a Verdict.
const (
	ReasonNotInstalled      = "NotInstalled"
	ReasonSameTemplate      = "SameTemplate"
	ReasonNewer             = "NewerVersion"
	ReasonInstalledNewer    = "InstalledVersionNewer"
	ReasonSameVersion       = "SameVersion"
	ReasonWantedUnversioned = "WantedVersionNotSemantic"
	ReasonInstalledUnknown  = "InstalledVersionNotSemantic"
	ReasonOutsideConstraint = "InstalledVersionOutsideConstraint"
)

// Verdict is the outcome of Decide.
type Verdict struct {
	Action Action
	// Reason says why, one of the Reason constants.
	Reason string
}

// Decide returns what to do with the install of a prerequisite (nil when
// there is none) for a workspace whose class wants template want, under
// the class's versionConstraint for it ("" for none):
//
//   - no install: Create;
//   - the same template: Keep;
//   - both versions semantic and want's newer: Upgrade;
//   - otherwise Keep: an older or equal version never replaces the
//     install, and a version that is not semantic cannot be ordered, so it
//     neither upgrades an install nor is upgraded from automatically;
//   - but Refuse a kept install of another template whose version the
//     constraint does not admit (or that has none to check).
//
// An invalid constraint is not checked: the class controller refuses such a
// class before any workspace of it gets here.
func Decide(installed *Template, want Template, constraint string) Verdict {
	if installed == nil {
		return Verdict{Create, ReasonNotInstalled}
	}
	if installed.Name == want.Name {
		return Verdict{Keep, ReasonSameTemplate}
	}
	var keep Verdict
	switch {
	case want.Version == nil:
		keep = Verdict{Keep, ReasonWantedUnversioned}
	case installed.Version == nil:
		keep = Verdict{Keep, ReasonInstalledUnknown}
	case want.Version.GreaterThan(installed.Version):
		return Verdict{Upgrade, ReasonNewer}
	case want.Version.Equal(installed.Version):
		keep = Verdict{Keep, ReasonSameVersion}
	default:
		keep = Verdict{Keep, ReasonInstalledNewer}
	}
	if constraint == "" {
		return keep
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return keep
	}
	if installed.Version == nil || !c.Check(installed.Version) {
		return Verdict{Refuse, ReasonOutsideConstraint}
	}
	return keep
}

// Candidate is an existing install of a prerequisite on a cluster.
type Candidate struct {
	// ServiceSet is the name of its ServiceSet.
	ServiceSet string
	// Release and Namespace are the name and namespace of its release on
	// the child cluster.
	Release, Namespace string
	// Template is the template it installs now.
	Template Template
	// Deleting is true once its ServiceSet is being deleted.
	Deleting bool
}

// Pick returns the index of the install that serves a prerequisite among
// several of one cluster (there should be one; more are left from before
// templates were matched by key), -1 for none: one that is not being
// deleted before one that is, then the highest semantic version, then a
// semantic version before none, then the first ServiceSet name.
func Pick(cands []Candidate) int {
	best := -1
	for i := range cands {
		if best < 0 || better(cands[i], cands[best]) {
			best = i
		}
	}
	return best
}

func better(a, b Candidate) bool {
	if a.Deleting != b.Deleting {
		return !a.Deleting
	}
	av, bv := a.Template.Version, b.Template.Version
	switch {
	case av != nil && bv != nil && !av.Equal(bv):
		return av.GreaterThan(bv)
	case (av == nil) != (bv == nil):
		return av != nil
	}
	return a.ServiceSet < b.ServiceSet
}
