// Package metrics_test scrapes the metrics endpoint of a running Apiary
// manager on envtest and reads what a user's Prometheus would: a management
// control plane with the k0rdent stand-in, a child control plane with GPU
// nodes, and a manager per test (direct delivery, then Git delivery to a
// loopback Git server, with the test playing Flux's part), each serving
// /metrics on a free loopback port.
package metrics_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/tools/clientcmd"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

const timeout = 60 * time.Second

// unreachableSuffix marks ClusterDeployments whose kubeconfig names a
// server nothing listens on.
const unreachableSuffix = "-down"

var (
	env, child *testenv.Environment
	gitServer  *testenv.GitServer
)

// TestMain starts the world; the ClusterDeployments named with
// unreachableSuffix get a kubeconfig of a server nothing listens on.
func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "metrics", Management: true, Flux: true, Child: true, Git: &world.Git{},
		StandIn: standin.InWorld()},
		func(r *world.Running) error {
			env, child, gitServer = r.Management, r.Child, r.Git
			down, err := withServer(r.ChildKubeconfig, "https://127.0.0.1:1")
			if err != nil {
				return fmt.Errorf("unreachable kubeconfig: %w", err)
			}
			r.Router(func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
				if strings.HasSuffix(cd.Name, unreachableSuffix) {
					return down
				}
				return nil
			})
			return nil
		})
}

func withServer(kubeconfig []byte, server string) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	return clientcmd.Write(*cfg)
}

// apiary starts a manager serving its metrics on a free loopback port and
// stops it when the test ends; it returns the metrics URL.
func apiary(t *testing.T, opts manager.Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	opts.RestConfig, opts.MetricsBindAddress, opts.NoCrossNamespaceRefs = env.Config, addr, true
	managertest.Start(t, opts)
	url := "http://" + addr + "/metrics"
	NewWithT(t).Eventually(func() error { _, err := scrape(url); return err }, timeout, 200*time.Millisecond).Should(Succeed())
	return url
}

// families is one scrape of the metrics endpoint, by metric name.
type families map[string]*dto.MetricFamily

func scrape(url string) (families, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return fams, nil
}

// series returns the series of a metric whose labels include kv (name, value, ...).
func (f families) series(name string, kv ...string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			ok = ok && labels[kv[i]] == kv[i+1]
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value is the value of the one gauge or counter series matching kv; -1
// when there is none, -2 when several match.
func (f families) value(name string, kv ...string) float64 {
	s := f.series(name, kv...)
	switch {
	case len(s) == 0:
		return -1
	case len(s) > 1:
		return -2
	}
	return s[0].GetGauge().GetValue() + s[0].GetCounter().GetValue()
}

// count is the sample count of the one histogram series matching kv; -1 when there is none.
func (f families) count(name string, kv ...string) int64 {
	s := f.series(name, kv...)
	if len(s) != 1 {
		return -1
	}
	return int64(s[0].GetHistogram().GetSampleCount())
}

// eventually scrapes url until check passes.
func eventually(t *testing.T, url string, check func(g Gomega, f families)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		f, err := scrape(url)
		g.Expect(err).NotTo(HaveOccurred())
		check(g, f)
	}, timeout, 250*time.Millisecond).Should(Succeed())
}
