// Package sandbox runs Apiary against an embedded local control plane
// (kube-apiserver and etcd), with Apiary's and k0rdent's CRDs installed and the
// shipped examples applied, so a newcomer sees it work with one command.
package sandbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/apiaryhq/apiary/config/crd"
	"github.com/apiaryhq/apiary/internal/manager"
	testcrds "github.com/apiaryhq/apiary/test/crds"
)

// Main runs the sandbox with command-line arguments and returns an exit code.
func Main(args []string) int {
	fset := flag.NewFlagSet("apiary sandbox", flag.ContinueOnError)
	assets := fset.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "Folder holding the kube-apiserver and etcd binaries (make testenv builds them).")
	dir := fset.String("dir", ".sandbox", "Folder for the sandbox's kubeconfig and state.")
	exitAfter := fset.Duration("exit-after", 0, "Stop after this long (for headless runs); 0 runs until interrupted.")
	if err := fset.Parse(args); err != nil {
		return 2
	}
	log := zap.New(zap.UseDevMode(false))
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *exitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *exitAfter)
		defer cancel()
	}
	if err := run(ctx, *assets, *dir); err != nil {
		fmt.Fprintf(os.Stderr, "apiary sandbox: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, assets, dir string) error {
	if assets == "" {
		return errors.New("no control-plane binaries: pass --assets or set KUBEBUILDER_ASSETS (make run does)")
	}
	crds, err := loadCRDs(crd.Bases, testcrds.K0rdent)
	if err != nil {
		return err
	}
	fmt.Println("» starting the local control plane (kube-apiserver + etcd)")
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting control plane: %w", err)
	}
	defer func() {
		fmt.Println("» stopping the local control plane")
		_ = env.Stop()
	}()
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("adding sandbox user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	abs, _ := filepath.Abs(kcPath)
	fmt.Printf("» control plane ready; in another shell:\n    export KUBECONFIG=%s\n    kubectl get colonies,wsc,wsd -A\n", abs)
	fmt.Println("» running Apiary (Ctrl-C stops everything)")
	start := time.Now()
	err = manager.Run(ctx, manager.Options{
		RestConfig:             cfg,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		Concurrency:            manager.DefaultConcurrency,
		Logger:                 ctrl.Log.WithName("apiary"),
	})
	fmt.Printf("» Apiary ran for %s\n", time.Since(start).Round(time.Second))
	return err
}

// loadCRDs decodes every YAML file of the given file systems into CRDs.
func loadCRDs(fsyss ...fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, fsys := range fsyss {
		err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
				return err
			}
			data, err := fs.ReadFile(fsys, path)
			if err != nil {
				return err
			}
			c := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(data, c); err != nil {
				return fmt.Errorf("decoding %s: %w", path, err)
			}
			out = append(out, c)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("loading CRDs: %w", err)
		}
	}
	return out, nil
}
