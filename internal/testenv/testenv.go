// Package testenv starts a real control plane (kube-apiserver and etcd, via
// controller-runtime's envtest) with Apiary's CRDs and the k0rdent test CRDs
// installed, for tests across the repository. Start it once per package in
// TestMain and give each test its own namespace.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

// Environment is a running control plane with a client for it.
type Environment struct {
	env *envtest.Environment
	// certDir is the API server's fixed certificate folder, with
	// WithRestartableAPIServer; removed by Stop.
	certDir string

	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is an uncached client with Apiary's scheme.
	Client client.Client
	// Scheme holds every type Apiary uses.
	Scheme *kruntime.Scheme
}

type options struct {
	crdDirs      []string
	withApiary   bool
	withK0rdent  bool
	restartable  bool
	startTimeout time.Duration
	stopTimeout  time.Duration
}

// Option changes how the environment starts.
type Option func(*options)

// WithoutK0rdentCRDs starts the control plane without the k0rdent CRDs, as on
// a management cluster where k0rdent is not installed yet.
func WithoutK0rdentCRDs() Option { return func(o *options) { o.withK0rdent = false } }

// WithStopTimeout bounds how long a stopping API server or etcd is given
// after SIGTERM before it is killed; 30s by default.
func WithStopTimeout(d time.Duration) Option { return func(o *options) { o.stopTimeout = d } }

// Bare starts a control plane without any CRD, as a child cluster is.
func Bare() Option {
	return func(o *options) { o.withApiary, o.withK0rdent = false, false }
}

// WithCRDDirs installs the CRDs of further directories, relative to the
// repository root when not absolute.
func WithCRDDirs(dirs ...string) Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, dirs...) }
}

// Start starts a control plane with Apiary's CRDs installed.
func Start(opts ...Option) (*Environment, error) {
	o := options{withApiary: true, withK0rdent: true, startTimeout: 90 * time.Second, stopTimeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	root := RepoRoot()
	var dirs []string
	if o.withApiary {
		dirs = append(dirs, filepath.Join(root, "config", "crd", "bases"))
	}
	if o.withK0rdent {
		dirs = append(dirs, filepath.Join(root, "test", "crds", "k0rdent"))
	}
	for _, d := range o.crdDirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(root, d)
		}
		dirs = append(dirs, d)
	}
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        dirs,
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: o.startTimeout,
		ControlPlaneStopTimeout:  o.stopTimeout,
	}
	var certDir string
	if o.restartable {
		if certDir, err = os.MkdirTemp("", "apiary-apiserver-"); err != nil {
			return nil, fmt.Errorf("creating the API server's certificate folder: %w", err)
		}
		env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	}
	if _, err := env.Start(); err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting envtest control plane from %s: %w", assets, err)
	}
	e, err := Wrap(env)
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	e.certDir = certDir
	return e, nil
}

// Wrap returns the Environment of an envtest control plane that is already
// running (the sandbox starts its own, with embedded CRDs).
func Wrap(env *envtest.Environment) (*Environment, error) {
	cfg := rest.CopyConfig(env.Config)
	// Tests create many objects quickly; do not let client-side throttling
	// stand between them and the API server.
	cfg.QPS, cfg.Burst = 500, 1000
	s := apiaryscheme.New()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Environment{env: env, Config: cfg, Client: c, Scheme: s}, nil
}

// Stop stops the control plane.
func (e *Environment) Stop() error {
	err := e.env.Stop()
	if e.certDir != "" {
		_ = os.RemoveAll(e.certDir)
	}
	return err
}

// AddUser creates a user in the control plane and returns a config that
// authenticates as that user, for tests of RBAC.
func (e *Environment) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// Kubeconfig returns a kubeconfig that reaches the control plane as an administrator.
func (e *Environment) Kubeconfig() ([]byte, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: "apiary-admin", Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("adding admin user: %w", err)
	}
	return u.KubeConfig()
}

// NewNamespace creates a namespace with a random name for one test and
// deletes it when the test ends.
func (e *Environment) NewNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// RepoRoot is the root of the Apiary repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// AssetsDir finds the kube-apiserver and etcd binaries: KUBEBUILDER_ASSETS
// when set, else the newest build under bin/k8s (made by `make testenv`).
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	matches, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", "k8s", "*", "kube-apiserver"))
	if len(matches) == 0 {
		return "", fmt.Errorf("no kube-apiserver found: run `make testenv` or set KUBEBUILDER_ASSETS")
	}
	sort.Strings(matches)
	return filepath.Dir(matches[len(matches)-1]), nil
}

// SharedK0rdentCRDDir returns the folder of the real k0rdent CRDs of the given
// version (e.g. "v1.8.0") beside the repository's parent, and whether it exists.
func SharedK0rdentCRDDir(version string) (string, bool) {
	candidates := []string{}
	if d := os.Getenv("APIARY_SHARED_DIR"); d != "" {
		candidates = append(candidates, d)
	}
	candidates = append(candidates, filepath.Join(RepoRoot(), "..", "shared"))
	for _, base := range candidates {
		dir := filepath.Join(base, "k0rdent", "crds", version)
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir, true
		}
	}
	return strings.Join(candidates, ", "), false
}

// ModuleCache is the Go module cache folder, where the CRDs of Flux and the
// Gateway API come from.
func ModuleCache() (string, error) {
	if cache := os.Getenv("GOMODCACHE"); cache != "" {
		return cache, nil
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Go module cache: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// FluxVersion is the Flux release whose CRDs the tests install (make
// flux-crds downloads its controller modules).
const FluxVersion = "v1.9.6"

// FluxCRDDirs returns the CRD folders of Flux's source-controller and
// kustomize-controller in the Go module cache.
func FluxCRDDirs() ([]string, error) {
	cache, err := ModuleCache()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, c := range []string{"source-controller", "kustomize-controller"} {
		dir := filepath.Join(cache, "github.com", "fluxcd", c+"@"+FluxVersion, "config", "crd", "bases")
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("Flux %s CRDs not found in %s: run `make flux-crds`", c, dir)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// GatewayAPIVersion is the Gateway API release whose CRDs the tests install
// from the Go module cache; the module is one of Apiary's dependencies.
const GatewayAPIVersion = "v1.6.3"

// GatewayAPICRDs returns the CRD files a regional cluster of the tests
// serves: the standard channel's GatewayClass, Gateway and HTTPRoute, and
// the experimental channel's TCPRoute (which also serves v1alpha2).
func GatewayAPICRDs() ([]string, error) {
	cache, err := ModuleCache()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "sigs.k8s.io", "gateway-api@"+GatewayAPIVersion, "config", "crd")
	files := []string{
		filepath.Join(dir, "standard", "gateway.networking.k8s.io_gatewayclasses.yaml"),
		filepath.Join(dir, "standard", "gateway.networking.k8s.io_gateways.yaml"),
		filepath.Join(dir, "standard", "gateway.networking.k8s.io_httproutes.yaml"),
		filepath.Join(dir, "experimental", "gateway.networking.k8s.io_tcproutes.yaml"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("Gateway API CRD not found (go mod download sigs.k8s.io/gateway-api): %w", err)
		}
	}
	return files, nil
}
