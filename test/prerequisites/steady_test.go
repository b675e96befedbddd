package prerequisites_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestPrerequisiteSteadyStateMakesNoRequests: reconciles of the
// prerequisite controller that find nothing to change (an install a
// workspace needs, and an unused one waiting for its deadline) send no
// request to the API server: they read the caches only.
func TestPrerequisiteSteadyStateMakesNoRequests(t *testing.T) {
	apiary(t, time.Hour)
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "steady")
	certManager(t, ns, "cert-manager-1-16", "1.16.0")
	gpuOperator := standin.NewHelmServiceTemplate(ns, "gpu-operator-v25-3-0", "gpu-operator", "v25.3.0",
		map[string]string{standin.AnnotationChart: standin.ChartPrerequisite})
	g.Expect(standin.CreateWithStatus(ctx, env.Client, gpuOperator)).To(Succeed())
	a := workspace(t, ns, ns+"-a", class(t, ns, "cm16-"+ns, "cert-manager-1-16", ""))
	b := workspace(t, ns, ns+"-b", class(t, ns, "gpu-"+ns, gpuOperator.Name, ""))
	running(t, a)
	running(t, b)
	var sets []k0rdentv1beta1.ServiceSet
	g.Eventually(func(g Gomega) { sets = prerequisites(g, ns); g.Expect(sets).To(HaveLen(2)) }, timeout).Should(Succeed())
	deleteAndWait(t, b)
	unused := &k0rdentv1beta1.ServiceSet{}
	for i := range sets {
		if sets[i].Spec.Services[0].Template == gpuOperator.Name {
			unused = &sets[i]
		}
	}
	unusedSince(t, unused)
	settle(ns, 2*time.Second)

	before, reconciled := requestsIn(ns), managertest.Reconciles("prerequisite")
	for i := range 5 {
		for j := range sets {
			patch := client.RawPatch("application/merge-patch+json",
				fmt.Appendf(nil, `{"metadata":{"annotations":{"test.apiary.dev/poke":"%d"}}}`, i))
			g.Expect(env.Client.Patch(ctx, &sets[j], patch)).To(Succeed())
		}
		time.Sleep(300 * time.Millisecond)
	}
	settle(ns, time.Second)
	g.Expect(managertest.Reconciles("prerequisite")-reconciled).To(BeNumerically(">=", 2), "the changes reached the controller")
	g.Expect(requestsIn(ns)-before).To(BeZero(), "requests at steady state")
	g.Expect(prerequisite.UnusedSince(unused.Annotations).IsZero()).To(BeFalse(), "the unused one still waits for its deadline")
}

// settle waits until the managers made no request to the namespace for quiet.
func settle(ns string, quiet time.Duration) {
	deadline := time.Now().Add(time.Minute)
	last, since := requestsIn(ns), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if n := requestsIn(ns); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}
