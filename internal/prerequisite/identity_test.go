package prerequisite

import (
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func template(name string, labels map[string]string, version string, helm *k0rdentv1beta1.HelmSpec) *k0rdentv1beta1.ServiceTemplate {
	return &k0rdentv1beta1.ServiceTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       k0rdentv1beta1.ServiceTemplateSpec{Version: version, Helm: helm},
	}
}

func chartSpecHelm(raw string) *k0rdentv1beta1.HelmSpec {
	return &k0rdentv1beta1.HelmSpec{ChartSpec: &apiextensionsv1.JSON{Raw: []byte(raw)}}
}

func TestKeyOf(t *testing.T) {
	chartRef := &k0rdentv1beta1.HelmSpec{ChartRef: &apiextensionsv1.JSON{Raw: []byte(`{"kind":"OCIRepository","name":"cm-1-17"}`)}}
	tests := []struct {
		name string
		st   *k0rdentv1beta1.ServiceTemplate
		want string
	}{
		{"chart name", template("cert-manager-1-16", nil, "1.16.0", chartSpecHelm(`{"chart":"cert-manager","version":"1.16.0"}`)), "cert-manager"},
		{"chart path in a Git source", template("cm", nil, "", chartSpecHelm(`{"chart":"./charts/cert-manager/"}`)), "cert-manager"},
		{"label wins over the chart", template("cm", map[string]string{LabelKey: "certs"}, "", chartSpecHelm(`{"chart":"cert-manager"}`)), "certs"},
		{"label names a chartRef template", template("cm-1-17", map[string]string{LabelKey: "cert-manager"}, "", chartRef), "cert-manager"},
		{"chartRef without label: the template's name", template("cm-1-17", nil, "", chartRef), "cm-1-17"},
		{"kustomize: the template's name", template("policies", nil, "", nil), "policies"},
		{"malformed chartSpec: the template's name", template("odd", nil, "", chartSpecHelm(`[1,2]`)), "odd"},
		{"empty chart: the template's name", template("odd", nil, "", chartSpecHelm(`{"chart":""}`)), "odd"},
		{"chart of slashes: the template's name", template("odd", nil, "", chartSpecHelm(`{"chart":"//"}`)), "odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(KeyOf(tt.st)).To(Equal(tt.want))
		})
	}
}

func TestVersionOf(t *testing.T) {
	tests := []struct {
		name     string
		st       *k0rdentv1beta1.ServiceTemplate
		want     string // "" for none
		wantRaw  string
		semantic bool
	}{
		{"spec.version", template("a", nil, "1.17.2", nil), "1.17.2", "1.17.2", true},
		{"leading v and short form", template("a", nil, "v1.17", nil), "1.17.0", "v1.17", true},
		{"pre-release", template("a", nil, "1.18.0-rc.1", nil), "1.18.0-rc.1", "1.18.0-rc.1", true},
		{"spec.version wins over the chart's", template("a", nil, "2.0.0", chartSpecHelm(`{"chart":"c","version":"1.0.0"}`)), "2.0.0", "2.0.0", true},
		{"chart version", template("a", nil, "", chartSpecHelm(`{"chart":"c","version":"1.16.4"}`)), "1.16.4", "1.16.4", true},
		{"chart version range is not a version", template("a", nil, "", chartSpecHelm(`{"chart":"c","version":">=1.0.0"}`)), "", ">=1.0.0", false},
		{"not semantic", template("a", nil, "latest", nil), "", "latest", false},
		{"none", template("a", nil, "", nil), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v, raw := VersionOf(tt.st)
			g.Expect(raw).To(Equal(tt.wantRaw))
			if !tt.semantic {
				g.Expect(v).To(BeNil())
				return
			}
			g.Expect(v).NotTo(BeNil())
			g.Expect(v.String()).To(Equal(tt.want))
		})
	}
}

func TestTemplate(t *testing.T) {
	g := NewWithT(t)
	tm := FromServiceTemplate(template("cert-manager-1-17", nil, "1.17.0", chartSpecHelm(`{"chart":"cert-manager"}`)))
	g.Expect(tm.String()).To(Equal("cert-manager-1-17 (1.17.0)"))
	g.Expect(tm.Same(Template{Name: "other", Key: "cert-manager"})).To(BeTrue())
	g.Expect(tm.Same(Template{Name: "cert-manager-1-17", Key: "x"})).To(BeTrue(), "the same template is the same prerequisite")
	g.Expect(tm.Same(Unresolved("cert-manager-1-16"))).To(BeFalse())
	g.Expect(Unresolved("gone").String()).To(Equal("gone"))
}
