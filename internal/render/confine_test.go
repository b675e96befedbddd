package render

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

// object is the YAML of one object; an empty namespace leaves the field out.
func object(apiVersion, kind, namespace, name string) string {
	s := "---\napiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s
}

func TestConfinementRefusesObjectsOutsideThePurpose(t *testing.T) {
	cd := object("k0rdent.mirantis.com/v1beta1", "ClusterDeployment", "team-a", "cd")
	tests := []struct {
		name    string
		purpose Purpose
		objects string
		want    error // nil: allowed
		line    int
		detail  string
	}{
		// Allowed.
		{"ClusterDeployment and its Secret and ConfigMap", PurposeColonyCluster,
			cd + object("v1", "Secret", "team-a", "s") + object("v1", "ConfigMap", "team-a", "c"), nil, 0, ""},
		{"ServiceSet and its values Secret", PurposeWorkspaceServiceSet,
			object("k0rdent.mirantis.com/v1beta1", "ServiceSet", "team-a", "ss") + object("v1", "Secret", "team-a", "v"), nil, 0, ""},
		{"routes and their own Namespace", PurposeWorkspaceRoutes,
			object("v1", "Namespace", "", "team-a") + object("v1", "Service", "team-a", "svc") +
				object("gateway.networking.k8s.io/v1", "HTTPRoute", "team-a", "h") +
				object("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "team-a", "t"), nil, 0, ""},
		{"Flux Kustomization", PurposeRoutesKustomization,
			object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "team-a", "k"), nil, 0, ""},
		// (a) another namespace.
		{"Secret in another namespace", PurposeColonyCluster,
			cd + object("v1", "Secret", "kube-system", "s"), ErrNamespaceNotAllowed, 8,
			`Secret s is in namespace "kube-system": a colony-cluster bundle renders objects only in namespace "team-a"`},
		{"ClusterDeployment without a namespace", PurposeColonyCluster,
			object("k0rdent.mirantis.com/v1beta1", "ClusterDeployment", "", "cd"), ErrNamespaceNotAllowed, 2,
			"ClusterDeployment cd has no metadata.namespace"},
		{"route on another namespace", PurposeWorkspaceRoutes,
			object("gateway.networking.k8s.io/v1", "HTTPRoute", "istio-system", "h"), ErrNamespaceNotAllowed, 2, `"istio-system"`},
		// (b) cluster-scoped.
		{"ClusterRole", PurposeColonyCluster,
			cd + object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "admin"), ErrClusterScoped, 8,
			"ClusterRole admin is cluster-scoped (it has no metadata.namespace): a colony-cluster bundle renders only " +
				`ClusterDeployment.k0rdent.mirantis.com, Secret, ConfigMap, in namespace "team-a"`},
		{"Namespace", PurposeWorkspaceServiceSet,
			object("v1", "Namespace", "", "team-a"), ErrClusterScoped, 2, "Namespace team-a is cluster-scoped"},
		{"another Namespace than the routes'", PurposeWorkspaceRoutes,
			object("v1", "Namespace", "", "kube-system"), ErrClusterScoped, 2, `and the Namespace "team-a"`},
		{"ClusterRoleBinding with a namespace field", PurposeColonyCluster,
			object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "team-a", "x"), ErrKindNotAllowed, 2, "ClusterRoleBinding team-a/x"},
		// (c) another kind.
		{"Pod", PurposeColonyCluster,
			object("v1", "Pod", "team-a", "p"), ErrKindNotAllowed, 2, "Pod team-a/p: a colony-cluster bundle renders only"},
		{"RoleBinding", PurposeWorkspaceServiceSet,
			object("rbac.authorization.k8s.io/v1", "RoleBinding", "team-a", "rb"), ErrKindNotAllowed, 2, "RoleBinding team-a/rb"},
		{"Secret for routes", PurposeWorkspaceRoutes,
			object("v1", "Secret", "team-a", "s"), ErrKindNotAllowed, 2, "Secret team-a/s"},
		{"ClusterDeployment for a workspace", PurposeWorkspaceServiceSet, cd, ErrKindNotAllowed, 2, "ClusterDeployment team-a/cd"},
		{"same kind in another group", PurposeColonyCluster,
			object("evil.example.com/v1", "ClusterDeployment", "team-a", "cd"), ErrKindNotAllowed, 2, "ClusterDeployment team-a/cd"},
		{"service account token Secret", PurposeColonyCluster,
			object("v1", "Secret", "team-a", "tok") + "type: kubernetes.io/service-account-token\n", ErrKindNotAllowed, 2,
			"type kubernetes.io/service-account-token is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := loadTest(t, map[string]string{"templates/objects.yaml": tt.objects})
			out, err := b.Render(Request{Purpose: tt.purpose, Namespace: "team-a"})
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out.Objects).NotTo(BeEmpty())
				return
			}
			t.Log(err)
			g.Expect(out).To(BeNil())
			rerr := asRenderError(g, err)
			g.Expect(rerr.Reason).To(Equal(ReasonNotAllowed))
			g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "want %v", tt.want)
			g.Expect(rerr.File).To(Equal("templates/objects.yaml"))
			g.Expect(rerr.Line).To(Equal(tt.line))
			g.Expect(err.Error()).To(ContainSubstring("output not allowed at templates/objects.yaml:"))
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
		})
	}
}

func TestConfinementNeedsAPurposeAndANamespace(t *testing.T) {
	b := loadTest(t, map[string]string{"templates/cm.yaml": object("v1", "ConfigMap", "team-a", "c")})
	for _, req := range []Request{{Namespace: "team-a"}, {Purpose: "anything", Namespace: "team-a"}, {Purpose: PurposeColonyCluster}} {
		g := NewWithT(t)
		out, err := b.Render(req)
		g.Expect(out).To(BeNil())
		g.Expect(asRenderError(g, err).Reason).To(Equal(ReasonInput))
	}
}

// A bundle of the manager's bundle directory that replaces the built-in
// colony-cluster bundle is confined as the built-in one is.
func TestConfinementHoldsForABundleReplacingABuiltIn(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeBundle(t, dir, ColonyClusterBundle, map[string]string{
		"Chart.yaml":        testChart,
		"templates/cd.yaml": object("k0rdent.mirantis.com/v1beta1", "ClusterDeployment", "{{ .Release.Namespace }}", "cd"),
		"templates/rb.yaml": object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "tenant-is-admin"),
	})
	r, err := NewRegistry(dir)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := r.Get(ColonyClusterBundle)
	g.Expect(err).NotTo(HaveOccurred())
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team-a"}}
	req, err := ColonyClusterRequest(colony, &infrav1.ColonyCluster{ClusterName: "a"}, "c-a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = b.Render(req)
	g.Expect(errors.Is(err, ErrClusterScoped)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("templates/rb.yaml")))
}

// The rules are those of ConfinementOf, and a copy cannot widen them.
func TestConfinementOfReturnsACopy(t *testing.T) {
	g := NewWithT(t)
	c, err := ConfinementOf(PurposeColonyCluster, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	c.Kinds[0].Kind = "ClusterRole"
	again, err := ConfinementOf(PurposeColonyCluster, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Kinds[0]).To(Equal(gkClusterDeployment))
	for p := range rules {
		_, statErr := os.Stat(filepath.Join("../../templates", string(p)))
		g.Expect(statErr).NotTo(HaveOccurred(), "purpose %q is named after its built-in bundle", p)
	}
}
