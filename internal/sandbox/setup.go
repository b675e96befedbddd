package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/config/crd"
	"github.com/apiaryhq/apiary/examples"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/testenv"
	testcrds "github.com/apiaryhq/apiary/test/crds"
	"github.com/apiaryhq/apiary/test/standin"
)

// loadCRDs decodes Apiary's CRDs and the k0rdent CRDs generated from its types.
func loadCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, fsys := range []fs.FS{crd.Bases, testcrds.K0rdent} {
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

// startStandIn runs the k0rdent stand-in (ClusterDeployments and ServiceSets)
// in a manager of its own, as k0rdent would run beside Apiary.
func startStandIn(ctx context.Context, cfg *rest.Config, childKubeconfig []byte) (<-chan struct{}, error) {
	_, done, err := standin.Run(ctx, cfg, &standin.StandIn{ChildKubeconfig: childKubeconfig})
	return done, err
}

// seed creates what k0rdent and an administrator would have installed (a
// ClusterTemplate, a Credential, the Jupyter ServiceTemplate, GPU nodes on
// the child), then applies the quick start manifests of examples/quickstart.
func seed(ctx context.Context, cfg, childCfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: apiaryscheme.New()})
	if err != nil {
		return err
	}
	childClient, err := client.New(childCfg, client.Options{})
	if err != nil {
		return err
	}
	const ns = "kcm-system"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "exalsius-remote-cluster-0-1-5", true),
		standin.NewCredential(ns, "remote-cred", true),
		// The quick start's chart is shaped like the workspace hub's Jupyter
		// chart: a Deployment of one pinned replica and a PersistentVolumeClaim
		// of the release, so that a stop scales something to zero and keeps a
		// volume (docs/lifecycle.md).
		standin.NewServiceTemplate(ns, "jupyter-notebook-0-3-0", true, map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub}),
	} {
		if err := standin.CreateWithStatus(ctx, c, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T: %w", obj, err)
		}
	}
	nodes := []struct {
		name     string
		labels   map[string]string
		resource string
		count    int64
	}{
		{"gpu-h100-a", map[string]string{"exalsius.ai/gpu-model": "H100-80GB", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, "nvidia.com/gpu", 8},
		{"gpu-h100-b", map[string]string{"exalsius.ai/gpu-model": "H100-80GB", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, "nvidia.com/gpu", 8},
		{"gpu-mi300x", map[string]string{"amd.com/gpu.product-name": "AMD-Instinct-MI300X"}, "amd.com/gpu", 8},
		{"cpu-1", nil, "", 0},
	}
	for _, n := range nodes {
		if err := standin.AddGPUNode(ctx, childClient, n.name, n.labels, n.resource, n.count); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("adding node %s: %w", n.name, err)
		}
	}
	for _, file := range []string{"quickstart/colony.yaml", "quickstart/workspaceclass.yaml", "quickstart/notebook-password.yaml", "quickstart/workspacedeployment.yaml"} {
		data, err := fs.ReadFile(examples.Quickstart, file)
		if err != nil {
			return err
		}
		objs, err := testenv.DecodeObjects(data)
		if err != nil {
			return fmt.Errorf("decoding examples/%s: %w", file, err)
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
				return fmt.Errorf("applying examples/%s: %w", file, err)
			}
		}
	}
	return nil
}
