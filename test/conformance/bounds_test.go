package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// decodeOne decodes one manifest with NAMESPACE replaced.
func decodeOne(t *testing.T, manifest, namespace string) *unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.DecodeObjects([]byte(fmt.Sprintf(manifest, namespace)))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding %q: %v", manifest, err)
	}
	return objs[0]
}

// TestResourceBounds: the API server refuses what internal/resources
// refuses of one workspace (resources.DefaultLimits) on deployments, class
// defaults and the status a controller writes, and negative TenantQuota
// limits, and accepts everything up to the bounds. A quantity whose
// exponent would make a decoder build 10^n is refused at once.
func TestResourceBounds(t *testing.T) {
	ns := env.NewNamespace(t, "bounds")
	wsd := func(resources string) string {
		return `{apiVersion: workspaces.exalsius.ai/v1, kind: WorkspaceDeployment, metadata: {name: w, namespace: %s},
			spec: {workspaceClassRef: c-1-0-0, clusterDeploymentRef: {name: c}, resources: ` + resources + `}}`
	}
	wsc := func(resources string) string {
		return `{apiVersion: workspaces.exalsius.ai/v1, kind: WorkspaceClass, metadata: {name: bounds-%s},
			spec: {displayName: B, serviceTemplate: {name: st}, defaultResources: ` + resources + `}}`
	}
	tq := func(hard string) string {
		return `{apiVersion: quota.apiary.dev/v1alpha1, kind: TenantQuota, metadata: {name: bounds-%s},
			spec: {namespaceSelector: {}, hard: ` + hard + `}}`
	}
	cases := []struct {
		name, manifest string
		refused        string // a substring of the refusal; "" when accepted
	}{
		{"every bound reached", wsd(`{replicas: 1000, perReplica: {gpuCount: 64, cpu: "4096", memory: 64Ti, storage: 1Pi}}`), ""},
		{"cpu as an integer", wsd(`{perReplica: {cpu: 4096}}`), ""},
		{"cpu in milli-cores", wsd(`{perReplica: {cpu: 4096000m}}`), ""},
		{"a two-digit exponent", wsd(`{perReplica: {memory: "1e12"}}`), ""},
		{"replicas 1001", wsd(`{replicas: 1001}`), "should be less than or equal to 1000"},
		{"gpuCount 65", wsd(`{perReplica: {gpuCount: 65}}`), "should be less than or equal to 64"},
		{"the hostile tenant's cpu", wsd(`{replicas: 3, perReplica: {cpu: "4000000000000000"}}`), "cpu must be at most 4096 per replica"},
		{"the hostile tenant's memory", wsd(`{replicas: 3, perReplica: {memory: 4Pi}}`), "memory must be at most 64Ti per replica"},
		{"a milli-core past the bound", wsd(`{perReplica: {cpu: 4096001m}}`), "cpu must be at most 4096"},
		{"storage past the bound", wsd(`{perReplica: {storage: 2Pi}}`), "storage must be at most 1Pi"},
		{"negative cpu", wsd(`{perReplica: {cpu: "-1"}}`), "cpu must not be negative"},
		{"negative memory", wsd(`{perReplica: {memory: -1Gi}}`), "memory must not be negative"},
		{"a three-digit exponent", wsd(`{perReplica: {cpu: "1e100"}}`), "an exponent of at most two digits"},
		{"an exponent of a hundred million", wsd(`{perReplica: {cpu: "1e100000000"}}`), "an exponent of at most two digits"},
		// Decoded with the exponent cast to int32, this is 1e-1420047872:
		// Apiary's informer would build 10^1420047872 to decode it.
		{"an exponent that wraps negative", wsd(`{perReplica: {memory: "1e10000001000000000"}}`), "an exponent of at most two digits"},
		{"a quantity of 65 characters", wsd(`{perReplica: {cpu: "0.` + fmt.Sprintf("%063d", 1) + `"}}`), "at most 64 characters"},
		{"class replicas 1001", wsc(`{replicas: 1001}`), "should be less than or equal to 1000"},
		{"class cpu past the bound", wsc(`{perReplica: {cpu: "1e30"}}`), "cpu must be at most 4096"},
		{"class gpuCount 65", wsc(`{perReplica: {gpuCount: 65}}`), "should be less than or equal to 64"},
		{"class at the bounds", wsc(`{replicas: 1000, perReplica: {gpuCount: 64, memory: 64Ti}}`), ""},
		{"quota limits", tq(`{cpu: "100000", memory: 8Ei, gpus: [{name: all, count: 1000000}]}`), ""},
		{"a negative cpu limit", tq(`{cpu: "-1"}`), "cpu must not be negative"},
		{"a negative memory limit", tq(`{memory: -64Gi}`), "memory must not be negative"},
		{"a cpu limit with a huge exponent", tq(`{cpu: "1e999999999"}`), "an exponent of at most two digits"},
		{"a negative GPU limit", tq(`{gpus: [{name: all, count: -1}]}`), "should be greater than or equal to 0"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			arg := ns
			if obj := decodeOne(t, tc.manifest, "x"); obj.GetNamespace() == "" {
				arg = fmt.Sprint(i)
			}
			obj := decodeOne(t, tc.manifest, arg)
			start := time.Now()
			err := env.Client.Create(context.Background(), obj, client.DryRunAll)
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the API server answers at once")
			if tc.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.refused)))
		})
	}
}

// TestAdmissionStatusBounds: a controller cannot record an admission past
// the bounds either.
func TestAdmissionStatusBounds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "bounds-status")
	obj := decodeOne(t, `{apiVersion: workspaces.exalsius.ai/v1, kind: WorkspaceDeployment, metadata: {name: w, namespace: %s},
		spec: {workspaceClassRef: c-1-0-0, clusterDeploymentRef: {name: c}}}`, ns)
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	for _, tc := range []struct {
		admission map[string]any
		refused   string
	}{
		{map[string]any{"cluster": ns + "/c", "admittedAt": "2026-01-01T00:00:00Z", "gpusPerReplica": int64(64), "replicas": int64(1000)}, ""},
		{map[string]any{"cluster": ns + "/c", "admittedAt": "2026-01-01T00:00:00Z", "gpusPerReplica": int64(65), "replicas": int64(1)}, "less than or equal to 64"},
		{map[string]any{"cluster": ns + "/c", "admittedAt": "2026-01-01T00:00:00Z", "gpusPerReplica": int64(1), "replicas": int64(1001)}, "less than or equal to 1000"},
		{map[string]any{"cluster": ns + "/c", "admittedAt": "2026-01-01T00:00:00Z", "gpusPerReplica": int64(-1), "replicas": int64(1)}, "greater than or equal to 0"},
	} {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		g.Expect(unstructured.SetNestedField(obj.Object, tc.admission, "status", "admission")).To(Succeed())
		err := env.Client.Status().Update(ctx, obj)
		if tc.refused == "" {
			g.Expect(err).NotTo(HaveOccurred())
			continue
		}
		g.Expect(err).To(MatchError(ContainSubstring(tc.refused)), "%v", tc.admission)
	}
}
