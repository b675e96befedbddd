package conformance

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLifetimeMustBePositive: a workspace's lifetime, and a class's default
// and maximum lifetime, are refused by the API server unless they are a
// positive duration. A zero or negative lifetime would end the workspace at
// its creation and read Stopped, Ready=True before it ever ran, which a
// `kubectl wait` or a Flux health check would take for success.
func TestLifetimeMustBePositive(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t, "lifetime")
	accepted := []string{"8h", "90m", "1h30m", "1.5h", "1s", "500ms"}
	refused := []string{"-1h", "0s", "0", "0h0m", "0ms", "banana", "1d", "9999999999999h", ""}

	// The values go to the API server as strings, verbatim: metav1.Duration
	// would re-spell them.
	workspace := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "workspaces.exalsius.ai/v1", "kind": "WorkspaceDeployment",
			"metadata": map[string]any{"namespace": ns, "name": "nb"},
			"spec": map[string]any{"workspaceClassRef": "cls",
				"clusterDeploymentRef": map[string]any{"name": "c1", "namespace": ns},
				"lifecycle":            map[string]any{"lifetime": v}}}}
	}
	class := func(field string) func(string) *unstructured.Unstructured {
		return func(v string) *unstructured.Unstructured {
			c := readFixture(t, "workspaceclass.yaml", ns)
			c.SetName("lifetime-class")
			if err := unstructured.SetNestedField(c.Object, v, "spec", "lifecycle", field); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	kinds := []struct {
		name  string
		build func(string) *unstructured.Unstructured
	}{
		{"workspace lifetime", workspace},
		{"class defaultLifetime", class("defaultLifetime")},
		{"class maxLifetime", class("maxLifetime")},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, v := range accepted {
				g.Expect(env.Client.Create(ctx, k.build(v), client.DryRunAll)).To(Succeed(), "%s %q", k.name, v)
			}
			for _, v := range refused {
				err := env.Client.Create(ctx, k.build(v), client.DryRunAll)
				g.Expect(err).To(HaveOccurred(), "%s %q must be refused", k.name, v)
				g.Expect(err.Error()).To(ContainSubstring("ifetime"), "%s %q: the error names the field", k.name, v)
			}
		})
	}
}
