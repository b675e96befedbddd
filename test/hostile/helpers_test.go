package hostile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// labelNamespace sets a namespace's labels.
func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	builder.LabelNamespace(t, env.Client, ns, labels)
}

// tenantKubeconfig is the child's kubeconfig as a tenant rewrote it:
// mutate changes its current cluster and user.
func tenantKubeconfig(t *testing.T, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	data, err := child.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	mutate(cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo])
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readyClusterWithKubeconfig creates a ready ClusterDeployment of ns whose
// kubeconfig Secret holds the tenant-written kubeconfig stored under key.
func readyClusterWithKubeconfig(t *testing.T, ns, name, key string) string {
	t.Helper()
	cd := standin.NewClusterDeployment(ns, name, "tpl", "cred")
	cd.Annotations = map[string]string{annotationKubeconfig: key}
	builder.CreateReady(t, env.Client, cd)
	return name
}

// makeFIFO makes a named pipe: a process that opens it to read blocks
// until a writer comes.
func makeFIFO(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// watchFIFO checks, until the returned stop is called, whether any
// process opens the FIFO for reading: a writer's non-blocking open
// succeeds only then. stop reports whether one did.
func watchFIFO(t *testing.T, path string) (stop func() bool) {
	t.Helper()
	done := make(chan struct{})
	opened := make(chan bool, 1)
	go func() {
		seen := false
		defer func() { opened <- seen }()
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				seen = true
				_ = f.Close()
				continue
			}
			if !errors.Is(err, syscall.ENXIO) {
				t.Errorf("probing the FIFO: %v", err)
				return
			}
		}
	}()
	return func() bool { close(done); return <-opened }
}

// gpuNode adds a child node of one GPU of the model hostile-<ns>, deleted
// when the test ends, and returns the model.
func gpuNode(t *testing.T, ns string) string {
	t.Helper()
	model, node := "hostile-"+ns, "node-"+ns
	if err := standin.AddGPUNode(context.Background(), child.Client, node, map[string]string{gpu.ModelLabel: model}, gpu.ResourceNVIDIA, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})
	return model
}
