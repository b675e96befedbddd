package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FluxOptions changes how StartFlux runs the controllers. The zero value is
// ready for use.
type FluxOptions struct {
	// BinDir holds the source-controller and kustomize-controller binaries.
	// Default: $APIARY_FLUX_BIN, else bin/flux/<FluxVersion> under the
	// repository root (made by `make flux-controllers`).
	BinDir string
	// Dir holds the kubeconfig, the artifact storage and the logs. Default: a
	// new temporary folder that Stop removes.
	Dir string
	// Namespace is the controllers' RUNTIME_NAMESPACE. Default: flux-system.
	Namespace string
	// RequeueDependency is how soon a Kustomization whose source is not
	// ready yet is tried again. Default: 2s (Flux's own default is 30s).
	RequeueDependency time.Duration
	// LogLevel is the controllers' --log-level (debug, info, error).
	// Default: info.
	LogLevel string
	// StartTimeout bounds the wait for both controllers to report ready.
	// Default: 60s.
	StartTimeout time.Duration
	// SourceArgs and KustomizeArgs are appended to each controller's flags.
	SourceArgs, KustomizeArgs []string
}

// Flux is a running source-controller and kustomize-controller, child
// processes of the test, reconciling the objects of an Environment.
type Flux struct {
	// Dir holds the kubeconfig, the artifact storage and the logs.
	Dir string
	// StorageAddr is the host:port of source-controller's artifact server.
	StorageAddr string

	ownDir bool
	procs  []*fluxProcess
}

type fluxProcess struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	health  string
	done    chan struct{}
}

// FluxBinDir is where StartFlux looks for the controllers by default:
// $APIARY_FLUX_BIN, else bin/flux/<FluxVersion> under the repository root.
func FluxBinDir() string {
	if d := os.Getenv("APIARY_FLUX_BIN"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin", "flux", FluxVersion)
}

// StartFlux runs Flux's source-controller and kustomize-controller against
// env and waits until both report ready; ctx bounds only that wait. env must
// have Flux's CRDs (testenv.WithCRDDirs(FluxCRDDirs()...)). Call Stop before
// env.Stop, or the control plane takes much longer to stop.
func StartFlux(ctx context.Context, env *Environment, opts FluxOptions) (*Flux, error) {
	if opts.BinDir == "" {
		opts.BinDir = FluxBinDir()
	}
	if opts.Namespace == "" {
		opts.Namespace = "flux-system"
	}
	if opts.RequeueDependency == 0 {
		opts.RequeueDependency = 2 * time.Second
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("Flux %s %s not found in %s: run `make flux-controllers` or set APIARY_FLUX_BIN: %w",
				name, FluxVersion, opts.BinDir, err)
		}
	}
	for _, crd := range []string{"gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			return nil, fmt.Errorf("Flux CRD %s missing: start the environment with testenv.WithCRDDirs(FluxCRDDirs()...): %w", crd, err)
		}
	}

	f := &Flux{Dir: opts.Dir}
	if f.Dir != "" {
		if err := os.MkdirAll(f.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating Flux folder: %w", err)
		}
	}
	if f.Dir == "" {
		dir, err := os.MkdirTemp("", "apiary-flux-")
		if err != nil {
			return nil, fmt.Errorf("creating Flux folder: %w", err)
		}
		f.Dir, f.ownDir = dir, true
	}
	started := false
	defer func() {
		if !started {
			_ = f.Stop()
		}
	}()
	kubeconfig, err := env.Kubeconfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for Flux: %w", err)
	}
	kubeconfigPath := filepath.Join(f.Dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing Flux kubeconfig: %w", err)
	}
	storage := filepath.Join(f.Dir, "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, fmt.Errorf("creating Flux storage folder: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	f.StorageAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	common := []string{
		"--metrics-addr=0",
		"--enable-leader-election=false",
		"--watch-all-namespaces=true",
		"--requeue-dependency=" + opts.RequeueDependency.String(),
		"--log-level=" + opts.LogLevel,
		"--log-encoding=console",
	}
	procEnv := append(os.Environ(), "KUBECONFIG="+kubeconfigPath, "RUNTIME_NAMESPACE="+opts.Namespace)
	specs := []struct {
		name   string
		health int
		args   []string
	}{
		{"source-controller", ports[1], append([]string{
			"--storage-path=" + storage,
			"--storage-addr=" + f.StorageAddr,
			"--storage-adv-addr=" + f.StorageAddr,
		}, opts.SourceArgs...)},
		{"kustomize-controller", ports[2], opts.KustomizeArgs},
	}
	for _, s := range specs {
		health := "127.0.0.1:" + strconv.Itoa(s.health)
		args := append(append([]string{"--health-addr=" + health}, common...), s.args...)
		p, err := startFluxProcess(filepath.Join(opts.BinDir, s.name), s.name, filepath.Join(f.Dir, s.name+".log"), procEnv, args)
		if err != nil {
			return nil, err
		}
		p.health = health
		f.procs = append(f.procs, p)
	}
	waitCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for _, p := range f.procs {
		if err := p.waitReady(waitCtx); err != nil {
			return nil, err
		}
	}
	started = true
	return f, nil
}

func startFluxProcess(bin, name, logPath string, env, args []string) (*fluxProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &fluxProcess{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls the controller's readiness endpoint until it answers OK.
func (p *fluxProcess) waitReady(ctx context.Context) error {
	url := "http://" + p.health + "/readyz"
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("checking %s readiness: %w", p.name, err)
		}
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); log %s ends:\n%s",
				p.name, p.cmd.ProcessState, p.logPath, tailFile(p.logPath, 4096))
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be ready; log %s ends:\n%s: %w",
				p.name, p.logPath, tailFile(p.logPath, 4096), ctx.Err())
		case <-tick.C:
		}
	}
}

// Stop ends both controllers and waits for them, then removes Dir when
// StartFlux created it. Call it before the Environment's Stop. It is safe to
// call more than once.
func (f *Flux) Stop() error {
	var errs []error
	for _, p := range f.procs {
		select {
		case <-p.done:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("killing %s: %w", p.name, err))
			}
			<-p.done
		}
	}
	if f.ownDir && f.Dir != "" {
		if err := os.RemoveAll(f.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing Flux folder %s: %w", f.Dir, err))
		}
		f.Dir = ""
	}
	return errors.Join(errs...)
}

// LogPaths returns the log file of each controller, keyed by its name.
func (f *Flux) LogPaths() map[string]string {
	out := map[string]string{}
	for _, p := range f.procs {
		out[p.name] = p.logPath
	}
	return out
}

// Logs returns the end (up to limit bytes each) of both controllers' logs,
// for a failing test's output.
func (f *Flux) Logs(limit int) string {
	var b strings.Builder
	for _, p := range f.procs {
		fmt.Fprintf(&b, "==> %s (%s) <==\n%s\n", p.name, p.logPath, tailFile(p.logPath, limit))
	}
	return b.String()
}

// RequestReconcile asks Flux to reconcile obj (a GitRepository, a
// Kustomization, ...) now rather than at its next interval, as
// `flux reconcile` does: it sets the reconcile.fluxcd.io/requestedAt
// annotation to the current time.
func (f *Flux) RequestReconcile(ctx context.Context, c client.Client, obj client.Object) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if kind == "" {
			kind = fmt.Sprintf("%T", obj)
		}
		return fmt.Errorf("requesting reconciliation of %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// freePorts reserves n distinct free loopback ports and releases them.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer func() { _ = ln.Close() }()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailFile returns at most the last limit bytes of a file.
func tailFile(path string, limit int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if limit > 0 && len(data) > limit {
		data = data[len(data)-limit:]
	}
	return string(data)
}
