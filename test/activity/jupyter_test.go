package activity_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/internal/workspace/activity"
)

// The Jupyter server runs in a network namespace of the test's own, on
// RFC 2544's benchmarking range: a real API server's Service proxy refuses
// loopback endpoints, and production reaches the server through that proxy.
const (
	hostAddr    = "198.18.0.1"
	jupyterAddr = "198.18.0.2"
	jupyterPort = 8888
)

// childConfig is a RESTConfigs that answers every cluster with one config.
type childConfig struct{ cfg *rest.Config }

func (c childConfig) RESTConfig(context.Context, types.NamespacedName) (*rest.Config, error) {
	return rest.CopyConfig(c.cfg), nil
}

// startJupyter runs Debian's Jupyter server with token in a network
// namespace reachable from this one at jupyterAddr, until the test ends.
func startJupyter(t *testing.T, token string) {
	t.Helper()
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import jupyter_server").Run(); err != nil {
		t.Fatalf("test/activity needs Jupyter: `apt-get install python3-jupyter-server` (.ci/run does): %v", err)
	}
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	ns, host, peer := "apiary-jupyter-"+id, "vah"+id, "van"+id
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	run("ip", "link", "set", peer, "netns", ns)
	run("ip", "addr", "add", hostAddr+"/30", "dev", host)
	run("ip", "link", "set", host, "up")
	run("ip", "netns", "exec", ns, "ip", "addr", "add", jupyterAddr+"/30", "dev", peer)
	run("ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")

	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "jupyter.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, python, "-m", "jupyter_server", "--ip="+jupyterAddr,
		fmt.Sprintf("--port=%d", jupyterPort), "--no-browser", "--allow-root", "--ServerApp.token="+token,
		"--ServerApp.root_dir="+dir, "--ServerApp.port_retries=0")
	cmd.Env = append(os.Environ(), "HOME="+dir, "JUPYTER_RUNTIME_DIR="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Jupyter: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	NewWithT(t).Eventually(func() error {
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/api/status?token=%s", jupyterAddr, jupyterPort, url.QueryEscape(token)))
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}, 60*time.Second, 250*time.Millisecond).Should(Succeed(), func() string { b, _ := os.ReadFile(log.Name()); return string(b) })
}

// TestEndpointSourceAgainstJupyter asks a real Jupyter server's
// /api/status, with its token, through a real API server's Service proxy,
// as the manager asks a child cluster: the server's last_activity is read,
// and a wrong token is a failed probe, never an idle reading.
func TestEndpointSourceAgainstJupyter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const token = "jupyter-token+with/odd&chars"
	startJupyter(t, token)

	child, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = child.Stop() })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-nb"}}
	g.Expect(child.Client.Create(ctx, ns)).To(Succeed())
	// The Service of the workspace's release, its pod and its endpoints as
	// the kubelet and the endpoints controller would write them (envtest runs
	// neither): the proxy only goes to an address that is a pod's IP.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ws-nb", Name: "nb-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "notebook", Image: "jupyter"}}}}
	g.Expect(child.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.PodIP, pod.Status.PodIPs = jupyterAddr, []corev1.PodIP{{IP: jupyterAddr}}
	g.Expect(child.Client.Status().Update(ctx, pod)).To(Succeed())
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ws-nb", Name: "nb-jupyter"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: jupyterPort, TargetPort: intstr.FromInt32(jupyterPort)}}}}
	g.Expect(child.Client.Create(ctx, svc)).To(Succeed())
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ws-nb", Name: "nb-jupyter"}, //nolint:staticcheck // what the proxy reads
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: jupyterAddr, //nolint:staticcheck
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ws-nb", Name: "nb-0"}}},
			Ports: []corev1.EndpointPort{{Name: "http", Port: jupyterPort}}}}} //nolint:staticcheck
	g.Expect(child.Client.Create(ctx, ep)).To(Succeed())

	src := &activity.Endpoint{Clusters: childConfig{child.Config}, Timeout: 5 * time.Second}
	target := activity.Target{Cluster: types.NamespacedName{Namespace: "team-a", Name: "cd-1"}, Namespace: "ws-nb",
		Service: "nb-jupyter", Port: jupyterPort, Format: activity.JupyterStatus, Token: token}
	started := time.Now().Add(-time.Minute)
	now := time.Now()
	obs, err := src.Observe(ctx, target, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.Known).To(BeTrue(), obs.Detail)
	// A server nobody used reports its start as its last activity.
	g.Expect(obs.LastActivity).To(BeTemporally(">", started), obs.Detail)
	g.Expect(obs.LastActivity).To(BeTemporally("<=", now), obs.Detail)

	wrong := target
	wrong.Token = "not-the-token"
	obs, err = src.Observe(ctx, wrong, time.Now())
	g.Expect(err).To(HaveOccurred(), "a refused token is a failed probe")
	g.Expect(obs.Known).To(BeFalse())
	g.Expect(err.Error()).NotTo(ContainSubstring(token))
	g.Expect(err.Error()).NotTo(ContainSubstring("not-the-token"), "a token never reaches an error")
}
