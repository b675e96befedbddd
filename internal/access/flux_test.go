package access

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func kustomizationInput() KustomizationInput {
	return KustomizationInput{
		Kustomization:    types.NamespacedName{Namespace: "kcm-system", Name: RoutesKustomizationName("region-a")},
		Regional:         types.NamespacedName{Namespace: "kcm-system", Name: "region-a"},
		Path:             "clusters/mgmt/apiary-routes/kcm-system/region-a",
		Source:           SourceRef{Kind: "GitRepository", Name: "fleet", Namespace: "flux-system"},
		KubeconfigSecret: "region-a-kubeconfig",
		KubeconfigKey:    "value",
		Labels:           map[string]string{"app.kubernetes.io/managed-by": "apiary"},
	}
}

func renderKustomization(t *testing.T, in KustomizationInput, values map[string]any) (*unstructured.Unstructured, error) {
	t.Helper()
	req := in.Request()
	req.Values = values
	objs, err := renderBundle(t, RoutesKustomizationBundle, req)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		t.Fatalf("want one object, got %d", len(objs))
	}
	return objs[0], nil
}

func TestRoutesKustomizationBundle(t *testing.T) {
	g := NewWithT(t)
	ks, err := renderKustomization(t, kustomizationInput(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ks.GetAPIVersion()).To(Equal("kustomize.toolkit.fluxcd.io/v1"))
	g.Expect(ks.GetKind()).To(Equal("Kustomization"))
	g.Expect(ks.GetNamespace()).To(Equal("kcm-system"))
	g.Expect(ks.GetName()).To(Equal("apiary-routes-region-a"))
	g.Expect(ks.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "apiary"))
	spec := ks.Object["spec"].(map[string]any)
	g.Expect(spec).To(HaveKeyWithValue("path", "./clusters/mgmt/apiary-routes/kcm-system/region-a"))
	g.Expect(spec).To(HaveKeyWithValue("prune", true))
	g.Expect(spec).To(HaveKeyWithValue("wait", false))
	g.Expect(spec).To(HaveKeyWithValue("deletionPolicy", "Orphan"), "a regional cluster that is gone cannot be pruned")
	g.Expect(spec).To(HaveKeyWithValue("interval", "10m"))
	g.Expect(spec["sourceRef"]).To(Equal(map[string]any{"kind": "GitRepository", "name": "fleet", "namespace": "flux-system"}))
	g.Expect(spec["kubeConfig"]).To(Equal(map[string]any{"secretRef": map[string]any{"name": "region-a-kubeconfig", "key": "value"}}))

	// Values change how Flux applies, not where.
	ks, err = renderKustomization(t, kustomizationInput(), map[string]any{"interval": "1m", "wait": true, "labels": map[string]any{"team": "net"}})
	g.Expect(err).NotTo(HaveOccurred())
	spec = ks.Object["spec"].(map[string]any)
	g.Expect(spec).To(HaveKeyWithValue("interval", "1m"))
	g.Expect(spec).To(HaveKeyWithValue("wait", true))
	g.Expect(ks.GetLabels()).To(HaveKeyWithValue("team", "net"))
	ks, err = renderKustomization(t, kustomizationInput(), map[string]any{"deletionPolicy": "MirrorPrune"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ks.Object["spec"]).To(HaveKeyWithValue("deletionPolicy", "MirrorPrune"))
}

func TestRoutesKustomizationBundleRefusesBadInput(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*KustomizationInput)
		values map[string]any
		want   string
	}{
		{name: "no path", mutate: func(in *KustomizationInput) { in.Path = "" }, want: "input path is required"},
		{name: "no source", mutate: func(in *KustomizationInput) { in.Source.Name = "" }, want: "input sourceRef.name is required"},
		{name: "no kubeconfig key", mutate: func(in *KustomizationInput) { in.KubeconfigKey = "" }, want: "input kubeConfigSecret.key is required"},
		{name: "bad interval", values: map[string]any{"interval": "often"}, want: "interval"},
		{name: "unknown value", values: map[string]any{"targetNamespace": "x"}, want: "targetNamespace"},
		{name: "bad deletion policy", values: map[string]any{"deletionPolicy": "Forget"}, want: "deletionPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := kustomizationInput()
			if tt.mutate != nil {
				tt.mutate(&in)
			}
			_, err := renderKustomization(t, in, tt.values)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(err.Error()).To(ContainSubstring(`bundle "routes-kustomization"`))
		})
	}
}

func TestRoutesKustomizationName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(RoutesKustomizationName("region-a")).To(Equal("apiary-routes-region-a"))
	long := RoutesKustomizationName(strings.Repeat("r", 63))
	g.Expect(len(long)).To(BeNumerically("<=", 63))
	g.Expect(long).NotTo(Equal(RoutesKustomizationName(strings.Repeat("r", 62) + "s")))
}
