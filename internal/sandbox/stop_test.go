package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// TestSandboxQuickStartStopsAndStarts follows docs/lifecycle.md on `make
// run` as a newcomer would: the quick start's notebook runs a Deployment and
// a volume of its release on the child; stopping it scales the Deployment to
// zero and keeps the volume, starting it brings the Deployment back with the
// same volume.
func TestSandboxQuickStartStopsAndStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	g := NewWithT(t)
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := &bytes.Buffer{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Assets: assets, Dir: dir, Out: out, Mode: "direct"}) }()
	defer func() {
		cancel()
		<-done
	}()

	clientOf := func(file string) client.Client {
		var c client.Client
		g.Eventually(func(g Gomega) {
			data, err := os.ReadFile(filepath.Join(dir, file))
			g.Expect(err).NotTo(HaveOccurred())
			cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
			g.Expect(err).NotTo(HaveOccurred())
			c, err = client.New(cfg, client.Options{Scheme: apiaryscheme.New()})
			g.Expect(err).NotTo(HaveOccurred())
		}, time.Minute, 200*time.Millisecond).Should(Succeed(), out.String())
		return c
	}
	mgmt, child := clientOf("kubeconfig"), clientOf("child.kubeconfig")
	key := types.NamespacedName{Namespace: "kcm-system", Name: "my-notebook"}
	phase := func(want workspacesv1.WorkspacePhase) {
		g.Eventually(func(g Gomega) {
			w := &workspacesv1.WorkspaceDeployment{}
			g.Expect(mgmt.Get(ctx, key, w)).To(Succeed())
			g.Expect(w.Status.Phase).To(Equal(want), w.Status.Message)
		}, 3*time.Minute, 250*time.Millisecond).Should(Succeed(), out.String())
	}
	workload := func(g Gomega) (*appsv1.Deployment, *corev1.PersistentVolumeClaim) {
		deps := &appsv1.DeploymentList{}
		g.Expect(child.List(ctx, deps, client.InNamespace("ws-my-notebook"))).To(Succeed())
		g.Expect(deps.Items).To(HaveLen(1), "the release's Deployment")
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(child.List(ctx, pvcs, client.InNamespace("ws-my-notebook"))).To(Succeed())
		g.Expect(pvcs.Items).To(HaveLen(1), "the release's volume")
		return &deps.Items[0], &pvcs.Items[0]
	}
	replicas := func(want int32) {
		g.Eventually(func(g Gomega) {
			d, _ := workload(g)
			g.Expect(d.Spec.Replicas).NotTo(BeNil())
			g.Expect(*d.Spec.Replicas).To(Equal(want))
		}, time.Minute, 250*time.Millisecond).Should(Succeed())
	}
	setStopped := func(stopped bool) {
		w := &workspacesv1.WorkspaceDeployment{}
		g.Expect(mgmt.Get(ctx, key, w)).To(Succeed())
		patch := client.MergeFrom(w.DeepCopy())
		if w.Spec.Lifecycle == nil {
			w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
		}
		w.Spec.Lifecycle.Stopped = stopped
		g.Expect(mgmt.Patch(ctx, w, patch)).To(Succeed())
	}

	phase(workspacesv1.PhaseRunning)
	replicas(1)
	var volume types.UID
	g.Eventually(func(g Gomega) { _, pvc := workload(g); volume = pvc.UID }).Should(Succeed())

	setStopped(true) // kubectl patch wsd my-notebook --type=merge -p '{"spec":{"lifecycle":{"stopped":true}}}'
	phase(workspacesv1.PhaseStopped)
	replicas(0)
	g.Eventually(func(g Gomega) { _, pvc := workload(g); g.Expect(pvc.UID).To(Equal(volume)) }).Should(Succeed())

	setStopped(false)
	phase(workspacesv1.PhaseRunning)
	replicas(1)
	g.Eventually(func(g Gomega) { _, pvc := workload(g); g.Expect(pvc.UID).To(Equal(volume)) }).Should(Succeed())
}
