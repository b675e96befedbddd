package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

// quickstart reads examples/quickstart/colony.yaml.
func quickstart(t testing.TB) *infrav1.Colony {
	t.Helper()
	data, err := os.ReadFile("../../examples/quickstart/colony.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := &infrav1.Colony{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		t.Fatal(err)
	}
	c.UID = "0d6c3e1c-0000-4000-8000-000000000001"
	return c
}

func colonyCluster(t testing.TB) *Bundle {
	t.Helper()
	r, err := NewRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Get(ColonyClusterBundle)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonMap decodes raw JSON the way the renderer does (integers as int64).
func jsonMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func rawJSON(t *testing.T, v any) *runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: data}
}

func TestColonyClusterQuickstartRendersVerbatim(t *testing.T) {
	g := NewWithT(t)
	colony := quickstart(t)
	entry := &colony.Spec.ColonyClusters[0]
	req, err := ColonyClusterRequest(colony, entry, colony.Name+"-"+entry.ClusterName, map[string]any{"deliveryMode": "direct"})
	g.Expect(err).NotTo(HaveOccurred())

	out, err := colonyCluster(t).Render(req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Objects).To(HaveLen(1))
	cd := out.Objects[0]
	g.Expect(cd.GetAPIVersion()).To(Equal("k0rdent.mirantis.com/v1beta1"))
	g.Expect(cd.GetKind()).To(Equal("ClusterDeployment"))
	g.Expect(cd.GetName()).To(Equal(colony.Name + "-" + entry.ClusterName))
	g.Expect(cd.GetNamespace()).To(Equal(colony.Namespace))
	g.Expect(cd.GetLabels()).To(Equal(map[string]string{
		infrav1.ColonyLabel:            colony.Name,
		"app.kubernetes.io/managed-by": "apiary",
	}))
	g.Expect(cd.GetOwnerReferences()).To(BeEmpty())
	g.Expect(cd.Object["spec"]).To(Equal(jsonMap(t, entry.ClusterDeploymentSpec.Raw)))
}

func TestColonyClusterEntries(t *testing.T) {
	verbatim := map[string]any{
		"template":   "aws-standalone-cp-1-0-0",
		"credential": "aws-cred",
		"serviceSpec": map[string]any{
			"services": []any{map[string]any{"name": "ingress", "namespace": "ingress", "template": "ingress-nginx-4-11-0"}},
		},
		"propagateCredentials": false,
		"ipamClaim":            map[string]any{"ref": "claim"},
	}
	withConfig := func(config any) map[string]any {
		m := map[string]any{}
		for k, v := range verbatim {
			m[k] = v
		}
		m["config"] = config
		return m
	}
	tests := []struct {
		name        string
		entry       infrav1.ColonyCluster
		values      any
		wantSpec    map[string]any
		wantLabels  map[string]string
		wantAnnots  map[string]string
		wantErrLike string
	}{{
		name:     "missing config gets {}",
		entry:    infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, verbatim)},
		wantSpec: withConfig(map[string]any{}),
	}, {
		name:     "null config gets {}",
		entry:    infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, withConfig(nil))},
		wantSpec: withConfig(map[string]any{}),
	}, {
		name:     "empty config is kept",
		entry:    infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, withConfig(map[string]any{}))},
		wantSpec: withConfig(map[string]any{}),
	}, {
		name:     "values are ignored when the spec is given",
		entry:    infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, withConfig(map[string]any{"x": int64(1)}))},
		values:   map[string]any{"template": "other"},
		wantSpec: withConfig(map[string]any{"x": int64(1)}),
	}, {
		name: "labels and annotations; the Colony label wins",
		entry: infrav1.ColonyCluster{
			ClusterName:           "a",
			ClusterDeploymentSpec: rawJSON(t, verbatim),
			ClusterLabels:         map[string]string{"team": "ml", infrav1.ColonyLabel: "spoofed"},
			ClusterAnnotations:    map[string]string{"note": "gpu pool"},
		},
		wantSpec:   withConfig(map[string]any{}),
		wantLabels: map[string]string{"team": "ml", infrav1.ColonyLabel: "c", "app.kubernetes.io/managed-by": "apiary"},
		wantAnnots: map[string]string{"note": "gpu pool"},
	}, {
		name:   "spec from values",
		entry:  infrav1.ColonyCluster{ClusterName: "a"},
		values: map[string]any{"template": "t", "credential": "cred", "propagateCredentials": false, "config": map[string]any{"workers": 2}},
		wantSpec: map[string]any{
			"template": "t", "credential": "cred", "propagateCredentials": false,
			"config": map[string]any{"workers": int64(2)},
		},
	}, {
		name:     "spec from values gets config {}",
		entry:    infrav1.ColonyCluster{ClusterName: "a"},
		values:   map[string]any{"template": "t", "config": nil},
		wantSpec: map[string]any{"template": "t", "config": map[string]any{}},
	}, {
		name:        "no spec and no template",
		entry:       infrav1.ColonyCluster{ClusterName: "a"},
		values:      map[string]any{"credential": "cred"},
		wantErrLike: "values.template is required",
	}, {
		name:        "spec without template",
		entry:       infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, map[string]any{"credential": "x"})},
		wantErrLike: "clusterDeploymentSpec.template is required",
	}, {
		name:        "values of the wrong type",
		entry:       infrav1.ColonyCluster{ClusterName: "a"},
		values:      map[string]any{"template": "t", "propagateCredentials": "no"},
		wantErrLike: "values do not match values.schema.json: at /propagateCredentials",
	}, {
		name:        "unknown value",
		entry:       infrav1.ColonyCluster{ClusterName: "a"},
		values:      map[string]any{"template": "t", "templat": "t"},
		wantErrLike: "'templat' not allowed",
	}}
	b := colonyCluster(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			entry := tt.entry
			if tt.values != nil {
				data, err := json.Marshal(tt.values)
				g.Expect(err).NotTo(HaveOccurred())
				entry.Values = &apiextensionsv1.JSON{Raw: data}
			}
			req, err := ColonyClusterRequest(colony, &entry, "c-a", nil)
			g.Expect(err).NotTo(HaveOccurred())
			out, err := b.Render(req)
			if tt.wantErrLike != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErrLike)))
				g.Expect(err.Error()).To(HavePrefix(`bundle "colony-cluster": `))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Objects).To(HaveLen(1))
			cd := out.Objects[0]
			g.Expect(cd.GetName()).To(Equal("c-a"))
			g.Expect(cd.Object["spec"]).To(Equal(tt.wantSpec))
			if tt.wantLabels != nil {
				g.Expect(cd.GetLabels()).To(Equal(tt.wantLabels))
			}
			g.Expect(cd.GetAnnotations()).To(Equal(tt.wantAnnots))
		})
	}
}

// The Colony label of a long Colony name is bounded like internal/naming
// bounds it: 54 characters, '-', eight hex characters of the name's SHA-256.
func TestColonyClusterLongColonyName(t *testing.T) {
	g := NewWithT(t)
	name := strings.Repeat("a", 53) + "-.b" + strings.Repeat("c", 20)
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	entry := &infrav1.ColonyCluster{ClusterName: "a", ClusterDeploymentSpec: rawJSON(t, map[string]any{"template": "t"})}
	req, err := ColonyClusterRequest(colony, entry, "cd", nil)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := colonyCluster(t).Render(req)
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256([]byte(name))
	g.Expect(out.Objects[0].GetLabels()).To(HaveKeyWithValue(infrav1.ColonyLabel, strings.Repeat("a", 53)+"-"+hex.EncodeToString(sum[:])[:8]))
}

func TestColonyClusterTemplateErrorNamesFileAndLine(t *testing.T) {
	g := NewWithT(t)
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	req, err := ColonyClusterRequest(colony, &infrav1.ColonyCluster{ClusterName: "a"}, "c-a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = colonyCluster(t).Render(req)
	rerr := asRenderError(g, err)
	g.Expect(rerr.Reason).To(Equal(ReasonTemplate))
	g.Expect(rerr.File).To(Equal("templates/clusterdeployment.yaml"))
	src, readErr := os.ReadFile("../../templates/colony-cluster/templates/clusterdeployment.yaml")
	g.Expect(readErr).NotTo(HaveOccurred())
	lines := strings.Split(string(src), "\n")
	g.Expect(rerr.Line).To(BeNumerically(">", 0))
	g.Expect(lines[rerr.Line-1]).To(ContainSubstring("values.template is required"))
}
