package managertest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// BinaryEnv names a manager binary to run instead of building this
// repository's: it lets a suite run against another build, such as an older
// commit's, to show what that build gets wrong.
const BinaryEnv = "APIARY_MANAGER_BINARY"

// BuildManager builds the apiary binary of this repository into dir, or
// returns the binary BinaryEnv names.
func BuildManager(dir string) (string, error) {
	if binary := os.Getenv(BinaryEnv); binary != "" {
		return binary, nil
	}
	binary := filepath.Join(dir, "apiary")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w: %s", err, out)
	}
	return binary, nil
}

// Process is the manager run as a process of its own, so that what a
// suite reports of it (its peak memory, a panic, an exit) is the manager's
// alone. Its log (stderr and stdout) goes to a file.
type Process struct {
	binary, logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	// exitErr is how the process ended by itself; nil while it runs or
	// when it was stopped.
	exitErr  error
	stopping bool
	// peakRSS is the largest resident set the process reached (VmHWM), in
	// bytes, read when it is stopped.
	peakRSS int64
}

// StartProcess runs binary with args, its log in logPath.
func StartProcess(binary, logPath string, args ...string) (*Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting the manager: %w", err)
	}
	p := &Process{binary: binary, logPath: logPath, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		if !p.stopping {
			p.exitErr = fmt.Errorf("the manager exited by itself: %v", err)
		}
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Exited says how the process ended by itself, nil while it runs (or once
// it was stopped).
func (p *Process) Exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// PeakRSS is the largest resident set of the process so far, in bytes.
func (p *Process) PeakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := readVmHWM(p.cmd.Process.Pid); v > p.peakRSS {
		p.peakRSS = v
	}
	return p.peakRSS
}

// Stop ends the process with SIGTERM (SIGKILL after 30s) and returns its log.
func (p *Process) Stop() string {
	p.PeakRSS()
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = p.log.Close()
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// Kill ends the process with SIGKILL, as a lost node would: it releases
// nothing, its Lease included. It returns the log.
func (p *Process) Kill() string {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.cmd.Process.Kill()
	<-p.exited
	_ = p.log.Close()
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// Panicked reports the first line of a Go panic or fatal error in a log,
// "" when there is none.
func Panicked(log string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") ||
			strings.Contains(line, "Observed a panic") || strings.Contains(line, "recovered from panic") {
			return line
		}
	}
	return ""
}

// readVmHWM reads the peak resident set of a process from /proc, in bytes;
// 0 when it cannot.
func readVmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			f := strings.Fields(string(rest))
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
