package standin

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func TestHasDeployed(t *testing.T) {
	rel := func(s release.Status) *release.Release { return &release.Release{Info: &release.Info{Status: s}} }
	tests := []struct {
		name    string
		history []*release.Release
		want    bool
	}{
		{name: "no release"},
		{name: "deployed", history: []*release.Release{rel(release.StatusDeployed)}, want: true},
		{name: "failed install", history: []*release.Release{rel(release.StatusFailed)}},
		{name: "failed upgrade of a deployed release", history: []*release.Release{rel(release.StatusDeployed), rel(release.StatusFailed)}, want: true},
		{name: "interrupted install", history: []*release.Release{rel(release.StatusPendingInstall)}},
		{name: "interrupted upgrade", history: []*release.Release{rel(release.StatusSuperseded), rel(release.StatusPendingUpgrade)}},
		{name: "no info", history: []*release.Release{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(hasDeployed(tt.history)).To(Equal(tt.want))
		})
	}
}

func TestHelmInstallOptions(t *testing.T) {
	raw := func(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
	tests := []struct {
		name string
		opts *k0rdentv1beta1.ServiceHelmOptions
		want bool
	}{
		{name: "none"},
		{name: "empty", opts: &k0rdentv1beta1.ServiceHelmOptions{}},
		{name: "install options", opts: &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: raw(`{"createNamespace":true}`)}, want: true},
		{name: "install options without it", opts: &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: raw(`{"replace":true}`)}},
		{name: "deprecated field", opts: &k0rdentv1beta1.ServiceHelmOptions{CreateNamespace: ptr.To(true)}, want: true},
		{name: "install options win", opts: &k0rdentv1beta1.ServiceHelmOptions{
			CreateNamespace: ptr.To(true), InstallOptions: raw(`{"createNamespace":false}`)}},
		{name: "malformed", opts: &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: raw(`[`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(helmInstallOptions(tt.opts).createNamespace).To(Equal(tt.want))
		})
	}
}
