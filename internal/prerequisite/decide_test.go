package prerequisite

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
)

// tmpl is a template of the prerequisite "cm" at a version ("" or a
// non-semantic string for none).
func tmpl(name, version string) Template {
	t := Template{Name: name, Key: "cm", RawVersion: version}
	if v, err := semver.NewVersion(version); err == nil && version != "" {
		t.Version = v
	}
	return t
}

func TestDecide(t *testing.T) {
	v116, v117, v117b := tmpl("cm-1-16", "1.16.0"), tmpl("cm-1-17", "1.17.0"), tmpl("cm-1-17-copy", "1.17.0")
	rc := tmpl("cm-1-18-rc", "1.18.0-rc.1")
	latest, none := tmpl("cm-latest", "latest"), tmpl("cm-unversioned", "")
	tests := []struct {
		name       string
		installed  *Template
		want       Template
		constraint string
		action     Action
		reason     string
	}{
		{"nothing installed", nil, v116, "", Create, ReasonNotInstalled},
		{"nothing installed, unversioned", nil, none, "", Create, ReasonNotInstalled},
		{"same template", &v116, v116, "", Keep, ReasonSameTemplate},
		{"same unversioned template", &latest, latest, "", Keep, ReasonSameTemplate},
		{"newer upgrades", &v116, v117, "", Upgrade, ReasonNewer},
		{"older never downgrades", &v117, v116, "", Keep, ReasonInstalledNewer},
		{"equal version, other template: the first stays", &v117, v117b, "", Keep, ReasonSameVersion},
		{"pre-release above the last release upgrades", &v117, rc, "", Upgrade, ReasonNewer},
		{"release above its pre-release upgrades", &rc, tmpl("cm-1-18", "1.18.0"), "", Upgrade, ReasonNewer},
		{"wanted not semantic: no upgrade", &v116, latest, "", Keep, ReasonWantedUnversioned},
		{"wanted without version: no upgrade", &v116, none, "", Keep, ReasonWantedUnversioned},
		{"installed not semantic: not replaced", &latest, v117, "", Keep, ReasonInstalledUnknown},
		{"both not semantic", &latest, none, "", Keep, ReasonWantedUnversioned},
		{"older class admits the newer install", &v117, v116, ">=1.16.0 <2.0.0", Keep, ReasonInstalledNewer},
		{"older class refuses the newer install", &v117, v116, "~1.16.0", Refuse, ReasonOutsideConstraint},
		{"constraint cannot hold on an install without version", &latest, v117, ">=1.17.0", Refuse, ReasonOutsideConstraint},
		{"constraint is not checked when upgrading", &v116, v117, "~1.17.0", Upgrade, ReasonNewer},
		{"constraint is not checked on the same template", &latest, latest, ">=1.0.0", Keep, ReasonSameTemplate},
		{"invalid constraint is not checked", &v117, v116, "not a constraint", Keep, ReasonInstalledNewer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.installed, tt.want, tt.constraint)
			NewWithT(t).Expect(got).To(Equal(Verdict{Action: tt.action, Reason: tt.reason}))
		})
	}
}

func TestPick(t *testing.T) {
	c := func(name, version string, deleting bool) Candidate {
		return Candidate{ServiceSet: name, Template: tmpl(name, version), Deleting: deleting}
	}
	tests := []struct {
		name  string
		cands []Candidate
		want  int
	}{
		{"none", nil, -1},
		{"one", []Candidate{c("a", "1.0.0", false)}, 0},
		{"highest version", []Candidate{c("a", "1.16.0", false), c("b", "1.17.0", false), c("c", "1.2.0", false)}, 1},
		{"semantic before none", []Candidate{c("a", "latest", false), c("b", "0.1.0", false)}, 1},
		{"not being deleted first", []Candidate{c("a", "2.0.0", true), c("b", "1.0.0", false)}, 1},
		{"only ones being deleted", []Candidate{c("a", "1.0.0", true), c("b", "2.0.0", true)}, 1},
		{"equal versions: first name", []Candidate{c("b", "1.0.0", false), c("a", "1.0.0", false)}, 1},
		{"no versions: first name", []Candidate{c("b", "", false), c("a", "x", false)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Pick(tt.cands)).To(Equal(tt.want))
		})
	}
}

func TestWritesCurrent(t *testing.T) {
	id := ID{Namespace: "ns", Cluster: "c1", Key: "cm"}
	v116, v117, v118 := tmpl("cm-1-16", "1.16.0"), tmpl("cm-1-17", "1.17.0"), tmpl("cm-1-18", "1.18.0")
	cand := func(name string, t Template) *Candidate { return &Candidate{ServiceSet: name, Template: t} }
	tests := []struct {
		name       string
		written    *Candidate
		cached     *Candidate
		want       *Candidate
		pending    bool
		remembered bool
	}{
		{"nothing written: the cache", nil, cand("s", v116), cand("s", v116), false, false},
		{"nothing written, nothing cached", nil, nil, nil, false, false},
		{"created, not cached yet", cand("s", v116), nil, cand("s", v116), true, true},
		{"upgraded, cache still old", cand("s", v117), cand("s", v116), cand("s", v117), true, true},
		{"cache caught up", cand("s", v117), cand("s", v117), cand("s", v117), false, false},
		{"cache newer than the write", cand("s", v117), cand("s", v118), cand("s", v118), false, false},
		{"cache holds another ServiceSet", cand("s", v117), cand("t", v116), cand("t", v116), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			w := &Writes{}
			if tt.written != nil {
				w.Record(id, *tt.written)
			}
			got, pending := w.Current(id, tt.cached)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(pending).To(Equal(tt.pending))
			g.Expect(w.Len() == 1).To(Equal(tt.remembered))
		})
	}
}

func TestWritesForgetAndLock(t *testing.T) {
	g := NewWithT(t)
	w := &Writes{}
	a, b := ID{Namespace: "ns", Cluster: "c1", Key: "cm"}, ID{Namespace: "other", Cluster: "c1", Key: "cm"}
	w.Record(a, Candidate{ServiceSet: "s", Template: tmpl("cm-1-16", "1.16.0")})
	w.Record(b, Candidate{ServiceSet: "s", Template: tmpl("cm-1-16", "1.16.0")})
	w.MarkRemoving("ns", "s")
	g.Expect(w.Removing("ns", "s")).To(BeTrue())
	g.Expect(w.Removing("other", "s")).To(BeFalse())
	w.Forget("ns", "s")
	g.Expect(w.Len()).To(Equal(1), "only the ServiceSet of that namespace is forgotten")
	g.Expect(w.Removing("ns", "s")).To(BeFalse())
	got, _ := w.Current(a, nil)
	g.Expect(got).To(BeNil())

	unlock := w.Lock(a)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Lock(a)()
	}()
	other := w.Lock(b) // another install is not held up
	other()
	g.Consistently(done, "50ms").ShouldNot(BeClosed())
	unlock()
	g.Eventually(done).Should(BeClosed())
}
