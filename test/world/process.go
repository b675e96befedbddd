package world

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultArgs are the flags every manager process of the tests gets before
// its own: the world's kubeconfig, no listeners, a CRD check every second.
func (r *Running) DefaultArgs() []string {
	return []string{
		"--kubeconfig=" + r.Kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--crd-check-interval=1s",
		"--gpu-inventory-interval=1m",
	}
}

// NewProcess prepares a manager process of the world's binary with
// DefaultArgs and args (later flags win), logging to logName in the work
// folder; Start runs it.
func (r *Running) NewProcess(logName string, args ...string) *Process {
	return &Process{Binary: r.Binary, Args: append(r.DefaultArgs(), args...), LogPath: filepath.Join(r.Dir, logName)}
}

// Process is the manager run as a process of its own, the one process
// runner of the tests: what a suite reports of it (its memory, a panic, an
// exit) is the manager's alone. It can be started, killed (SIGKILL, as a
// lost node), stopped (SIGTERM) and started again; every run appends to
// its log file.
type Process struct {
	// Binary, Args and Env (KEY=value, added to the test's) are what runs.
	Binary string
	Args   []string
	Env    []string
	// LogPath is the log file (stdout and stderr).
	LogPath string
	// OnLine, when set, sees each line the process writes to stderr, as it
	// comes; a false result keeps the line out of the log.
	OnLine func(line string) bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	ending bool
	// starts and kills count the runs; selfExits are the exits not caused
	// by Kill or Stop.
	starts, kills int
	selfExits     []string
	peakRSS       int64
}

// Start runs the process, with env (KEY=value) added to Env.
func (p *Process) Start(env ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("the manager runs already")
	}
	if p.log == nil {
		log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("creating the manager's log: %w", err)
		}
		p.log = log
	}
	cmd := exec.Command(p.Binary, p.Args...)
	cmd.Env = append(append(os.Environ(), p.Env...), env...)
	cmd.Stdout = p.log
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the manager: %w", err)
	}
	p.starts++
	fmt.Fprintf(p.log, "=== run %d (pid %d) %s\n", p.starts, cmd.Process.Pid, strings.Join(env, " "))
	p.cmd, p.exited, p.ending = cmd, make(chan struct{}), false
	go p.follow(cmd, stderr, p.exited)
	return nil
}

// follow copies stderr to the log through OnLine, then records how the
// process ended.
func (p *Process) follow(cmd *exec.Cmd, stderr io.Reader, exited chan<- struct{}) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if p.OnLine != nil && !p.OnLine(line) {
			continue
		}
		p.mu.Lock()
		fmt.Fprintln(p.log, line)
		p.mu.Unlock()
	}
	err := cmd.Wait()
	p.mu.Lock()
	if !p.ending {
		p.selfExits = append(p.selfExits, fmt.Sprintf("run %d exited by itself: %v", p.starts, err))
	}
	p.mu.Unlock()
	close(exited)
}

// Running reports whether the process runs.
func (p *Process) Running() bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Pid is the process id of the current run, 0 when none runs.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run ends (nil when none runs).
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	return p.exited
}

// Kill ends the process with SIGKILL, as a lost node would: it releases
// nothing, its Lease included. It returns the log.
func (p *Process) Kill() string { return p.end(syscall.SIGKILL, true) }

// Stop ends the process with SIGTERM (SIGKILL after 30s) and returns the log.
func (p *Process) Stop() string { return p.end(syscall.SIGTERM, false) }

// Restart kills the process and starts it again with env.
func (p *Process) Restart(env ...string) error {
	p.Kill()
	return p.Start(env...)
}

func (p *Process) end(sig syscall.Signal, kill bool) string {
	p.PeakRSS()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil {
		p.mu.Unlock()
		return p.Log()
	}
	p.ending = true
	if kill {
		p.kills++
	}
	p.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(StopTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
	p.mu.Lock()
	p.cmd = nil
	if p.log != nil {
		_ = p.log.Close()
		p.log = nil // Start opens it again, to append
	}
	p.mu.Unlock()
	return p.Log()
}

// Log is the log so far.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Exited says how the process ended by itself, nil when it never did.
func (p *Process) Exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.selfExits) == 0 {
		return nil
	}
	return fmt.Errorf("the manager exited by itself: %s", strings.Join(p.selfExits, "; "))
}

// Counts returns the starts, the kills and the exits of its own.
func (p *Process) Counts() (starts, kills int, selfExits []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, p.kills, append([]string(nil), p.selfExits...)
}

// PeakRSS is the largest resident set of the process so far (the kernel's
// VmHWM, of every run), in bytes.
func (p *Process) PeakRSS() int64 {
	v := p.Status("VmHWM")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peakRSS = max(p.peakRSS, v)
	return p.peakRSS
}

// Status reads a field of /proc/<pid>/status in bytes (VmRSS, RssAnon,
// RssFile, VmHWM); 0 when none runs.
func (p *Process) Status(field string) int64 {
	pid := p.Pid()
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			if f := strings.Fields(string(rest)); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// CPUSeconds is the CPU time the current run used so far, user and system
// (/proc/<pid>/stat, in clock ticks of 1/100 s).
func (p *Process) CPUSeconds() float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses: state
	// is the first, utime the 12th and stime the 13th.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(utime+stime) / 100
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
