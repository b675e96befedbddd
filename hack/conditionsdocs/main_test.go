package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestConditionsDocIsFresh fails when docs/conditions.md is not what the
// source generates: a reason, condition or event added, renamed or moved
// without `make conditions-docs`.
func TestConditionsDocIsFresh(t *testing.T) {
	g := NewWithT(t)
	s, err := scan("../..")
	g.Expect(err).NotTo(HaveOccurred())
	var want bytes.Buffer
	write(&want, s)
	got, err := os.ReadFile("../../docs/conditions.md")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(want.String()), "docs/conditions.md is stale: run make conditions-docs")
}

// TestScanFindsWhatTheCodeSets runs the scanner on a small tree: constants
// by name and type, their users, literal reasons and events through a
// wrapper.
func TestScanFindsWhatTheCodeSets(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFile(t, root, "api/things/v1/conditions.go", `package v1

// ReadyCondition is the summary.
const ReadyCondition = "Ready"

// Reasons of things.
const (
	// BrokenReason: it broke.
	BrokenReason = "Broken"
	OddOne       = "Odd"
	UnusedReason = "Unused"
)

// Phase is a phase.
type Phase string

// Phases.
const PhaseUp Phase = "Up"

const maxThings = "Nope"
`)
	writeFile(t, root, "internal/thing/thing.go", `package thing

import (
	v1 "github.com/apiaryhq/apiary/api/things/v1"
	"github.com/fluxcd/pkg/runtime/conditions"
)

const localReason = "Local"

func set(obj any, reason string) {
	conditions.MarkFalse(obj, v1.ReadyCondition, v1.BrokenReason, "x")
	conditions.MarkTrue(obj, v1.ReadyCondition, "Literal", "x")
	_ = v1.OddOne
}

// event records an event.
func (r *R) event(obj any, reason string) {
	r.Recorder.Eventf(obj, nil, "Normal", reason, "Reconcile", "m")
}

func use(r *R) { r.event(nil, localReason); set(nil, "Wrapped") }
`)
	writeFile(t, root, "internal/thing/thing_test.go", `package thing

func x() { set(nil, "FromATest") }
`)
	s, err := scan(root)
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]Constant{}
	for _, c := range s.Constants {
		byName[c.Name] = c
	}
	g.Expect(byName).To(HaveLen(6))
	g.Expect(byName["ReadyCondition"].Kind).To(Equal("condition"))
	g.Expect(byName["ReadyCondition"].Users).To(Equal([]string{"internal/thing/thing.go"}))
	g.Expect(byName["BrokenReason"].Doc).To(Equal("BrokenReason: it broke."))
	g.Expect(byName["OddOne"].Kind).To(Equal("reason"), "a member of a group of reasons")
	g.Expect(byName["OddOne"].Users).To(HaveLen(1))
	g.Expect(byName["UnusedReason"].Users).To(BeEmpty())
	g.Expect(byName["PhaseUp"].Kind).To(Equal("phase"))
	g.Expect(byName["localReason"].Users).To(Equal([]string{"internal/thing/thing.go"}))
	g.Expect(byName).NotTo(HaveKey("maxThings"))
	var lits []string
	for _, l := range s.Literals {
		lits = append(lits, l.Value)
	}
	g.Expect(lits).To(Equal([]string{"Literal", "Wrapped"}))
	g.Expect(s.Events).To(HaveLen(1))
	g.Expect(s.Events[0].Func).To(Equal("event"))
	g.Expect(s.Events[0].Doc).To(Equal("event records an event."))
	g.Expect(s.Events[0].Reasons).To(Equal([]string{"localReason"}))
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
