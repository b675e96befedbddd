package crash_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/internal/crashpoint"
)

// manager runs the apiary binary as a separate process against the
// management control plane, and kills and restarts it. Its stderr (the
// manager's log) goes to a file per test; crash-point markers are read from
// it as they come.
type manager struct {
	t    testing.TB
	args []string
	log  *os.File

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	killed  bool
	markers chan string
	// starts and kills count the runs; selfExits are exits not caused by
	// a kill or a stop, which a crash-consistent manager never has.
	starts, kills int
	selfExits     []string
}

// newManager prepares a manager with flags on top of the defaults of the
// tests (no listeners, a CRD check every second); Stop runs at the end of
// the test.
func newManager(t testing.TB, flags ...string) *manager {
	t.Helper()
	log, err := os.Create(filepath.Join(workDir, strings.ReplaceAll(t.Name(), "/", "_")+".log"))
	if err != nil {
		t.Fatal(err)
	}
	m := &manager{t: t, log: log, args: append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--crd-check-interval=1s",
		"--gpu-inventory-interval=1m",
	}, flags...)}
	t.Cleanup(func() {
		m.Stop()
		_ = log.Close()
	})
	return m
}

// Start runs the manager with extra environment variables (KEY=value).
func (m *manager) Start(env ...string) {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.t.Fatalf("manager already running")
	}
	cmd := exec.Command(binary, m.args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = m.log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("starting the manager: %v", err)
	}
	m.starts++
	fmt.Fprintf(m.log, "=== run %d (pid %d) %s\n", m.starts, cmd.Process.Pid, strings.Join(env, " "))
	m.cmd, m.exited, m.killed, m.markers = cmd, make(chan struct{}), false, make(chan string, 64)
	go m.follow(cmd, stderr, m.markers, m.exited)
}

// follow copies the log and hands markers on, then records how the process ended.
func (m *manager) follow(cmd *exec.Cmd, stderr io.Reader, markers chan<- string, exited chan<- struct{}) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		m.mu.Lock()
		fmt.Fprintln(m.log, line)
		m.mu.Unlock()
		if name, ok := strings.CutPrefix(line, crashpoint.Marker); ok {
			select {
			case markers <- name:
			default:
			}
		}
	}
	err := cmd.Wait()
	m.mu.Lock()
	if !m.killed {
		m.selfExits = append(m.selfExits, fmt.Sprintf("run %d exited by itself: %v", m.starts, err))
	}
	m.mu.Unlock()
	close(exited)
}

// Running reports whether the process runs.
func (m *manager) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Pid is the process id of the current run, 0 when none runs.
func (m *manager) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Kill sends SIGKILL and waits until the process is gone.
func (m *manager) Kill() { m.end(syscall.SIGKILL, true) }

// Stop ends the process gracefully (SIGTERM), as at the end of a test.
func (m *manager) Stop() { m.end(syscall.SIGTERM, false) }

func (m *manager) end(sig syscall.Signal, count bool) {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	if cmd == nil {
		m.mu.Unlock()
		return
	}
	m.killed = true
	if count {
		m.kills++
	}
	m.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	m.mu.Lock()
	m.cmd = nil
	m.mu.Unlock()
}

// WaitMarker waits until the current run reaches the crash point name.
func (m *manager) WaitMarker(name string, timeout time.Duration) error {
	m.mu.Lock()
	markers, exited := m.markers, m.exited
	m.mu.Unlock()
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

// Counts returns the starts, kills and exits of its own.
func (m *manager) Counts() (starts, kills int, selfExits []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starts, m.kills, append([]string(nil), m.selfExits...)
}
