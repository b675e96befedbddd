// Package world is the one test harness of Apiary's suites, in the shape of
// Cluster API's: a suite describes the world its tests run in as a value
// (World: which control planes — management, child, regional —, a Git
// server, Flux, the k0rdent stand-in, the manager in-process or as a
// process, and its flags) and starts it with one call, usually
//
//	func TestMain(m *testing.M) { world.Main(m, world.World{...}, setup) }
//
// Main parses the flags, runs fuzz workers without a world, starts the
// world, runs the suite's setup, runs the tests, stops the world and exits.
//
// The package builds on internal/testenv (control planes, the Git server,
// Flux). It imports neither internal/manager nor internal/controller nor
// test/standin, so that the tests of any package, theirs included, can use
// it: the in-process manager (World.Manager, see managertest.InProcess) and
// the stand-in (World.StandIn, see standin.InWorld) are handed in as
// functions.
package world

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// World describes what a suite's tests run in. The zero World starts
// nothing: Main then only parses flags and runs the tests.
type World struct {
	// Name names the suite in messages and its work folder (apiary-<Name>-).
	Name string

	// Management starts a management control plane with Apiary's and the
	// k0rdent test CRDs; ManagementOptions are further testenv options of it
	// (a restartable API server, its stop timeout, other CRDs).
	Management        bool
	ManagementOptions []testenv.Option
	// Flux installs Flux's CRDs on the management control plane.
	Flux bool
	// FluxControllers, when set, runs Flux's source-controller and
	// kustomize-controller against the management control plane (implies
	// Flux).
	FluxControllers *testenv.FluxOptions

	// Child starts a bare child control plane, the cluster every
	// ClusterDeployment's kubeconfig reaches unless routed elsewhere (see
	// Running.KubeconfigFor); ChildGateway makes it serve the Gateway API.
	Child, ChildGateway bool
	// ChildOptions are further testenv options of the child control plane
	// (e.g. CRDs a test installs there).
	ChildOptions []testenv.Option
	// Children starts that many further bare child control planes
	// (Running.Children), for tests of several clusters at once; routes to
	// them are the suite's (Running.Route).
	Children int
	// Regional starts a regional control plane serving the Gateway API, which
	// ClusterDeployments annotated RegionalAnnotation reach; TenantGateway,
	// when set, is created on it.
	Regional      bool
	TenantGateway *testenv.TenantGateway

	// Git starts a loopback Git server under the work folder.
	Git *Git

	// StandIn runs the k0rdent stand-in on the management control plane
	// (standin.InWorld).
	StandIn StandInFunc

	// Manager runs Apiary's manager in the test process from after setup
	// until the world stops (managertest.InProcess); Running.Manager
	// restarts it.
	Manager ManagerFunc
	// Binary builds the manager's binary into the work folder (see
	// BuildManager), for Running.NewProcess; Process, when set, also starts
	// one such process after setup, with these flags added to the defaults,
	// until the world stops.
	Binary  Build
	Process []string

	// Short skips the suite under -short, saying so.
	Short bool
	// Skip, when set and returning a reason, skips the whole suite: nothing
	// starts and no test runs.
	Skip func() string
	// Bare, when set and true, runs the tests without starting the world
	// (as for fuzz workers), e.g. when no benchmark needing it was asked for.
	Bare func() bool
	// KeepOnFailure keeps the work folder (logs, clones) when a test failed.
	KeepOnFailure bool
}

// Git is the Git server of a World.
type Git struct {
	// Options of the server, such as basic authentication.
	Options []testenv.GitServerOption
	// Repos are created with their branch and a first commit (README.md).
	Repos []Repo
}

// Repo is a repository the Git server starts with.
type Repo struct{ Name, Branch string }

// StandInFunc runs the k0rdent stand-in against the management control
// plane cfg until ctx ends, writing into each ClusterDeployment's
// kubeconfig Secret what kubeconfigFor returns.
type StandInFunc func(ctx context.Context, cfg *rest.Config, kubeconfigFor func(*k0rdentv1beta1.ClusterDeployment) []byte) error

// ManagerFunc runs Apiary's manager against the management control plane
// cfg until ctx ends; dir is the world's work folder.
type ManagerFunc func(ctx context.Context, cfg *rest.Config, dir string) error

// Running is a started World.
type Running struct {
	World World

	// Management, Child and Regional are the control planes asked for.
	Management, Child, Regional *testenv.Environment
	// Children are the further child control planes (World.Children).
	Children []*testenv.Environment
	// ChildKubeconfig and RegionalKubeconfig reach them as administrators.
	ChildKubeconfig, RegionalKubeconfig []byte
	// ChildClient and RegionalClient know the Gateway API's types (Child:
	// with ChildGateway only).
	ChildClient, RegionalClient client.Client
	// Git is the Git server, Flux the Flux controllers, when asked for.
	Git  *testenv.GitServer
	Flux *testenv.Flux

	// Dir is the work folder, removed by Stop (kept on failure with
	// KeepOnFailure).
	Dir string
	// Kubeconfig is a file in Dir that reaches Management as an
	// administrator, for manager processes.
	Kubeconfig string
	// Binary is the manager's binary, with World.Binary.
	Binary string
	// Manager is the in-process manager, with World.Manager; it starts
	// after the suite's setup.
	Manager *InProcess
	// Process is the manager process, with World.Process (log
	// "manager.log" in Dir); it starts after the suite's setup.
	Process *Process

	ctx    context.Context
	cancel context.CancelFunc
	routes routes

	mu      sync.Mutex
	stops   []func()
	atEnd   []func(code int) int
	stopped bool
}

// Start starts w; on error nothing is left running. Stop ends it.
func Start(w World) (*Running, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(LogOutput())))
	r := &Running{World: w}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.Defer(r.cancel)
	ok := false
	defer func() {
		if !ok {
			r.Stop(1)
		}
	}()
	name := w.Name
	if name == "" {
		name = "world"
	}
	dir, err := os.MkdirTemp("", "apiary-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating the work folder: %w", err)
	}
	r.Dir = dir
	if w.Binary.Wanted() || w.Process != nil {
		start := time.Now()
		if r.Binary, err = BuildManager(dir, w.Binary); err != nil {
			return nil, err
		}
		fmt.Printf("%s: built the manager in %s\n", name, time.Since(start).Round(time.Millisecond))
	}
	if err := r.startControlPlanes(); err != nil {
		return nil, err
	}
	if err := r.startGit(); err != nil {
		return nil, err
	}
	if w.StandIn != nil {
		if r.Management == nil {
			return nil, fmt.Errorf("the stand-in needs the management control plane")
		}
		// The stand-in stops before the control planes do.
		ctx, cancel := context.WithCancel(r.ctx)
		r.Defer(cancel)
		if err := w.StandIn(ctx, r.Management.Config, r.KubeconfigFor); err != nil {
			return nil, fmt.Errorf("starting the stand-in: %w", err)
		}
	}
	if w.Manager != nil {
		r.Manager = &InProcess{run: w.Manager, cfg: r.Management.Config, dir: r.Dir}
	}
	if w.Process != nil {
		r.Process = r.NewProcess("manager.log", w.Process...)
	}
	if w.FluxControllers != nil {
		if r.Flux, err = testenv.StartFlux(r.ctx, r.Management, *w.FluxControllers); err != nil {
			return nil, fmt.Errorf("starting Flux: %w", err)
		}
		r.Defer(func() { _ = r.Flux.Stop() })
	}
	ok = true
	return r, nil
}

// startControlPlanes starts the control planes asked for, and writes the
// management kubeconfig file.
func (r *Running) startControlPlanes() error {
	w := r.World
	var err error
	if w.Management {
		opts := append([]testenv.Option(nil), w.ManagementOptions...)
		if w.Flux || w.FluxControllers != nil {
			dirs, err := testenv.FluxCRDDirs()
			if err != nil {
				return fmt.Errorf("finding Flux's CRDs: %w", err)
			}
			opts = append(opts, testenv.WithCRDDirs(dirs...))
		}
		if r.Management, err = testenv.Start(opts...); err != nil {
			return fmt.Errorf("starting the management control plane: %w", err)
		}
		r.Defer(func() { stopEnv("management", r.Management) })
		admin, err := r.Management.Kubeconfig()
		if err != nil {
			return fmt.Errorf("management kubeconfig: %w", err)
		}
		r.Kubeconfig = filepath.Join(r.Dir, "kubeconfig")
		if err := os.WriteFile(r.Kubeconfig, admin, 0o600); err != nil {
			return fmt.Errorf("writing the management kubeconfig: %w", err)
		}
	}
	if w.Child || w.ChildGateway {
		if w.ChildGateway {
			r.Child, r.ChildClient, err = testenv.StartGatewayPlane()
		} else {
			r.Child, err = testenv.Start(append([]testenv.Option{testenv.Bare()}, w.ChildOptions...)...)
		}
		if err != nil {
			return fmt.Errorf("starting the child control plane: %w", err)
		}
		r.Defer(func() { stopEnv("child", r.Child) })
		if r.ChildKubeconfig, err = r.Child.Kubeconfig(); err != nil {
			return fmt.Errorf("child kubeconfig: %w", err)
		}
		r.Route(RouteChild, r.ChildKubeconfig)
	}
	for i := range w.Children {
		env, err := testenv.Start(testenv.Bare())
		if err != nil {
			return fmt.Errorf("starting child control plane %d: %w", i+1, err)
		}
		r.Defer(func() { stopEnv("child", env) })
		r.Children = append(r.Children, env)
	}
	if w.Regional {
		if r.Regional, r.RegionalClient, err = testenv.StartGatewayPlane(); err != nil {
			return fmt.Errorf("starting the regional control plane: %w", err)
		}
		r.Defer(func() { stopEnv("regional", r.Regional) })
		if r.RegionalKubeconfig, err = r.Regional.Kubeconfig(); err != nil {
			return fmt.Errorf("regional kubeconfig: %w", err)
		}
		r.Route(RouteRegional, r.RegionalKubeconfig)
		if w.TenantGateway != nil {
			if err := w.TenantGateway.Create(r.ctx, r.RegionalClient); err != nil {
				return fmt.Errorf("creating the tenant Gateway: %w", err)
			}
		}
	}
	return nil
}

// startGit starts the Git server and its repositories.
func (r *Running) startGit() error {
	if r.World.Git == nil {
		return nil
	}
	var err error
	if r.Git, err = testenv.StartGitServer(filepath.Join(r.Dir, "git"), r.World.Git.Options...); err != nil {
		return fmt.Errorf("starting the Git server: %w", err)
	}
	r.Defer(func() { _ = r.Git.Stop() })
	for _, repo := range r.World.Git.Repos {
		if err := r.Git.InitRepo(repo.Name, repo.Branch); err != nil {
			return fmt.Errorf("creating the repository %s: %w", repo.Name, err)
		}
		if _, err := r.Git.Commit(repo.Name, repo.Branch, "start", map[string][]byte{"README.md": []byte(repo.Name + "\n")}); err != nil {
			return fmt.Errorf("first commit of %s: %w", repo.Name, err)
		}
	}
	return nil
}

// startManagers starts the in-process manager and the manager process the
// World asks for (after setup).
func (r *Running) startManagers() error {
	if r.Manager != nil {
		r.Manager.Start()
		r.Defer(func() {
			if err := r.Manager.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "manager: %v\n", err)
			}
		})
	}
	if r.Process != nil {
		if err := r.Process.Start(); err != nil {
			return err
		}
		r.Defer(func() { r.Process.Stop() })
	}
	return nil
}

// Context ends when the world stops.
func (r *Running) Context() context.Context { return r.ctx }

// Defer runs f when the world stops, before what was deferred earlier.
func (r *Running) Defer(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, f)
}

// AtEnd runs f once the tests ran, before the world stops, with their exit
// code; f returns the code to exit with (e.g. 1 on a finding of its own).
func (r *Running) AtEnd(f func(code int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.atEnd = append(r.atEnd, f)
}

// Stop stops everything the world started, in the reverse order, and
// removes the work folder unless the tests failed (code != 0) and the World
// keeps it.
func (r *Running) Stop(code int) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	stops := r.stops
	r.stops = nil
	r.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	if r.Dir == "" {
		return
	}
	if code != 0 && r.World.KeepOnFailure {
		fmt.Fprintf(os.Stderr, "%s: logs and clones kept in %s\n", r.World.Name, r.Dir)
		return
	}
	_ = os.RemoveAll(r.Dir)
}

func stopEnv(name string, e *testenv.Environment) {
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the %s control plane: %v\n", name, err)
	}
}
