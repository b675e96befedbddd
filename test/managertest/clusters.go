package managertest

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// Clusters are what a suite's managers run against: a management control
// plane with the k0rdent stand-in, and one child control plane that every
// ClusterDeployment's kubeconfig points at, where the stand-in installs
// ServiceSets with Helm.
type Clusters struct {
	Management, Child *testenv.Environment
	// ServiceSets is the stand-in's ServiceSet part, for install counts.
	ServiceSets *standin.ServiceSets

	stops []func()
}

// StartClusters starts the control planes and the stand-in, and points
// controller-runtime's logger at LogOutput. Stop ends them. configure, if
// given, sets the stand-in's knobs before it starts.
func StartClusters(configure ...func(*standin.StandIn)) (*Clusters, error) {
	return StartClustersWith(nil, configure...)
}

// StartClustersWith is StartClusters with further options of the
// management control plane, such as the CRDs of Flux.
func StartClustersWith(management []testenv.Option, configure ...func(*standin.StandIn)) (*Clusters, error) {
	c := &Clusters{}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	var err error
	if c.Management, err = testenv.Start(management...); err != nil {
		return nil, fmt.Errorf("starting management control plane: %w", err)
	}
	c.stops = append(c.stops, func() { _ = c.Management.Stop() })
	if c.Child, err = testenv.Start(testenv.Bare()); err != nil {
		return nil, fmt.Errorf("starting child control plane: %w", err)
	}
	c.stops = append(c.stops, func() { _ = c.Child.Stop() })
	kubeconfig, err := c.Child.Kubeconfig()
	if err != nil {
		return nil, fmt.Errorf("child kubeconfig: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(LogOutput())))
	ctx, cancel := context.WithCancel(context.Background())
	c.stops = append(c.stops, cancel)
	si := &standin.StandIn{KubeconfigFor: func(*k0rdentv1beta1.ClusterDeployment) []byte { return kubeconfig }}
	for _, f := range configure {
		f(si)
	}
	if c.ServiceSets, _, err = standin.Run(ctx, c.Management.Config, si); err != nil {
		return nil, fmt.Errorf("stand-in: %w", err)
	}
	ok = true
	return c, nil
}

// Stop stops the stand-in and the control planes.
func (c *Clusters) Stop() {
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
	c.stops = nil
}

// LogOutput is where managers log in tests: nowhere, unless APIARY_TEST_LOGS
// is set.
func LogOutput() io.Writer {
	if os.Getenv("APIARY_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}

// ReadyCluster creates in ns what k0rdent and an administrator provide (the
// ClusterTemplate "tpl", the Credential "cred", the workspace
// ServiceTemplate "tmpl") and a ClusterDeployment of them, and waits until
// the stand-in reports it Ready.
func ReadyCluster(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	Templates(t, c, ns)
	CreateReady(t, c, standin.NewClusterDeployment(ns, name, "tpl", "cred"))
}

// Templates creates in ns what k0rdent and an administrator provide: the
// ClusterTemplate "tpl", the Credential "cred" and the workspace
// ServiceTemplate "tmpl".
func Templates(t testing.TB, c client.Client, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "tpl", true),
		standin.NewCredential(ns, "cred", true),
		standin.NewServiceTemplate(ns, "tmpl", true, nil),
	} {
		if err := standin.CreateWithStatus(context.Background(), c, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// CreateReady creates a ClusterDeployment (of "tpl" and "cred", see
// Templates) and waits until the stand-in reports it Ready.
func CreateReady(t testing.TB, c client.Client, cd *k0rdentv1beta1.ClusterDeployment) {
	t.Helper()
	ctx := context.Background()
	ns, name := cd.Namespace, cd.Name
	if err := c.Create(ctx, cd); err != nil {
		t.Fatalf("creating ClusterDeployment: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got := &k0rdentv1beta1.ClusterDeployment{}
		err := c.Get(ctx, client.ObjectKeyFromObject(cd), got)
		if err == nil && apimeta.IsStatusConditionTrue(got.Status.Conditions, k0rdentv1beta1.ReadyCondition) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterDeployment %s/%s is not Ready within a minute (last error: %v)", ns, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
