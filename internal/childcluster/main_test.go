package childcluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

var (
	mgmt *testenv.Environment
	// children are two bare control planes standing for child clusters, with
	// their admin kubeconfigs.
	children    [2]*testenv.Environment
	kubeconfigs [2][]byte
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	// Fuzz targets need no control plane; workers would each start three.
	world.Main(m, world.World{Name: "childcluster", Management: true, Children: len(children), Bare: world.Fuzzing},
		func(r *world.Running) error {
			mgmt = r.Management
			for i := range children {
				children[i] = r.Children[i]
				kc, err := children[i].Kubeconfig()
				if err != nil {
					return fmt.Errorf("child kubeconfig: %w", err)
				}
				kubeconfigs[i] = kc
			}
			return nil
		})
}

// stopAtOnce is the IdleTimeout of Managers whose caches and informers stop
// as soon as no owner needs them.
const stopAtOnce = -1

// newManager returns a Manager reading Secrets of the management cluster,
// stopped when the test ends.
func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	if mgmt == nil {
		t.Skip("no control plane while fuzzing")
	}
	m := NewManager(mgmt.Client, opts)
	t.Cleanup(m.Stop)
	return m
}

// newCluster returns the name of a ClusterDeployment in a new namespace of
// the management cluster (no ClusterDeployment object is needed).
func newCluster(t *testing.T) types.NamespacedName {
	t.Helper()
	if mgmt == nil {
		t.Skip("no control plane while fuzzing")
	}
	return types.NamespacedName{Namespace: mgmt.NewNamespace(t, "cd"), Name: "cd-" + rand.String(5)}
}

// writeKubeconfig creates or updates the Secret <cd>-kubeconfig.
func writeKubeconfig(t *testing.T, cd types.NamespacedName, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cd.Namespace, Name: cd.Name + KubeconfigSecretSuffix}}
	err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
	s.Data = map[string][]byte{KubeconfigSecretKey: kubeconfig}
	if err == nil {
		err = mgmt.Client.Update(ctx, s)
	} else {
		err = mgmt.Client.Create(ctx, s)
	}
	if err != nil {
		t.Fatalf("writing kubeconfig secret: %v", err)
	}
}

// withServer returns kubeconfig with every cluster's server replaced.
func withServer(t *testing.T, kubeconfig []byte, server string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// createNode creates a Node in a child with labels, an annotation, GPU
// capacity and a Ready condition (set through the status subresource, as
// envtest has no kubelet), and deletes it when the test ends.
func createNode(t *testing.T, child *testenv.Environment, gpus string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "node-" + rand.String(6),
		Labels:      map[string]string{"nvidia.com/gpu.product": "H100"},
		Annotations: map[string]string{"note": "dropped by the cache"},
	}}
	if err := child.Client.Create(ctx, n); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { _ = child.Client.Delete(context.Background(), n) })
	n.Status = corev1.NodeStatus{
		Capacity:    corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)},
		Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if err := child.Client.Status().Update(ctx, n); err != nil {
		t.Fatalf("setting node status: %v", err)
	}
	return n
}
