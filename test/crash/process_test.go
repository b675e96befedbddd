package crash_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/internal/crashpoint"
	"github.com/apiaryhq/apiary/test/world"
)

// manager runs the apiary binary as a separate process (world.Process)
// against the management control plane, and kills and restarts it. Its
// log goes to a file per test; crash-point markers are read from it as
// they come.
type manager struct {
	*world.Process
	t testing.TB

	mu      sync.Mutex
	markers chan string
}

// newManager prepares a manager with flags on top of the world's defaults
// (no listeners, a CRD check every second); Stop runs at the end of the
// test.
func newManager(t testing.TB, flags ...string) *manager {
	t.Helper()
	return newManagerLog(t, strings.ReplaceAll(t.Name(), "/", "_")+".log", flags...)
}

// newManagerLog is newManager logging to logName (one per manager of a
// test with several).
func newManagerLog(t testing.TB, logName string, flags ...string) *manager {
	t.Helper()
	m := &manager{t: t, Process: running.NewProcess(logName, flags...)}
	m.OnLine = func(line string) bool {
		if name, ok := strings.CutPrefix(line, crashpoint.Marker); ok {
			m.mu.Lock()
			markers := m.markers
			m.mu.Unlock()
			select {
			case markers <- name:
			default:
			}
		}
		return true
	}
	t.Cleanup(func() { m.Stop() })
	return m
}

// Start runs the manager with extra environment variables (KEY=value).
func (m *manager) Start(env ...string) {
	m.t.Helper()
	m.mu.Lock()
	m.markers = make(chan string, 64)
	m.mu.Unlock()
	if err := m.Process.Start(env...); err != nil {
		m.t.Fatal(err)
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (m *manager) Kill() { m.Process.Kill() }

// Stop ends the process gracefully (SIGTERM), as at the end of a test.
func (m *manager) Stop() { m.Process.Stop() }

// WaitMarker waits until the current run reaches the crash point name.
func (m *manager) WaitMarker(name string, timeout time.Duration) error {
	m.mu.Lock()
	markers := m.markers
	m.mu.Unlock()
	exited := m.Done()
	deadline := time.After(timeout)
	for {
		select {
		case got := <-markers:
			if got == name {
				return nil
			}
		case <-exited:
			return errors.New("the manager exited before " + name)
		case <-deadline:
			return fmt.Errorf("the manager did not reach %s within %s", name, timeout)
		}
	}
}
