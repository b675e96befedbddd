package world

import (
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
)

// Main is a suite's TestMain: it parses the flags, runs fuzz workers (and
// the tests of a World whose Bare says so) without a world, skips the
// suite as the World says, starts w, runs setup (the suite's own objects;
// nil for none), runs the tests, runs what setup asked to run at the end,
// stops the world and exits with the tests' code.
func Main(m *testing.M, w World, setup func(*Running) error) {
	os.Exit(run(m, w, setup))
}

func run(m *testing.M, w World, setup func(*Running) error) int {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run() // fuzz workers run pure fuzz targets only: no world
	}
	if w.Bare != nil && w.Bare() {
		return m.Run()
	}
	if w.Short && testing.Short() {
		fmt.Printf("%s: skipped in -short mode\n", w.Name)
		return 0
	}
	if w.Skip != nil {
		if reason := w.Skip(); reason != "" {
			fmt.Printf("%s: skipped; %s\n", w.Name, reason)
			return 0
		}
	}
	r, err := Start(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", w.Name, err)
		return 1
	}
	code := 1
	defer func() { r.Stop(code) }()
	if setup != nil {
		if err := setup(r); err != nil {
			fmt.Fprintf(os.Stderr, "%s: setting up: %v\n", w.Name, err)
			return 1
		}
	}
	if err := r.startManagers(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting the manager: %v\n", w.Name, err)
		return 1
	}
	code = m.Run()
	r.mu.Lock()
	atEnd := r.atEnd
	r.mu.Unlock()
	for _, f := range atEnd {
		code = f(code)
	}
	return code
}

// Fuzzing says whether the test binary was asked to fuzz (-test.fuzz), for
// World.Bare of suites whose fuzz targets need no world.
func Fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// LogOutput is where managers and the stand-in log in tests: nowhere,
// unless APIARY_TEST_LOGS is set.
func LogOutput() io.Writer {
	if os.Getenv("APIARY_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}
