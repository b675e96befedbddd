package hostile_test

import (
	"fmt"
	"testing"

	"github.com/apiaryhq/apiary/test/world"
)

var (
	// manager is the running Apiary process.
	manager *world.Process
	// peakRSS is the largest resident set of the managers so far.
	peakRSS int64
	// logNames are the log files of the managers run, in workDir.
	logNames []string
)

// startManager runs the manager with managerArgs and extra; name names
// its log file.
func startManager(name string, extra ...string) error {
	log := "manager-" + name + ".log"
	logNames = append(logNames, log)
	manager = running.NewProcess(log, append(append([]string{}, managerArgs...), extra...)...)
	return manager.Start()
}

// stopManager stops the running manager and says what went wrong with it:
// a panic or an exit of its own; "" when nothing did.
func stopManager() string {
	exited := manager.Exited()
	peakRSS = max(peakRSS, manager.PeakRSS())
	log := manager.Stop()
	out := ""
	if line := world.Panicked(log); line != "" {
		out += fmt.Sprintf("the manager panicked: %s\n", line)
	}
	if exited != nil {
		out += fmt.Sprintln(exited)
	}
	return out
}

// switchManager replaces the running manager with one that has the extra
// flags, for the rest of the test; the usual one runs again afterwards.
func switchManager(t *testing.T, name string, extra ...string) {
	t.Helper()
	if problems := stopManager(); problems != "" {
		t.Error(problems)
	}
	if err := startManager(name, extra...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if problems := stopManager(); problems != "" {
			t.Error(problems)
		}
		if err := startManager("direct-again"); err != nil {
			t.Fatal(err)
		}
	})
}
