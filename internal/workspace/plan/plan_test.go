package plan

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ServiceSetName("quickstart-child-1", "my-notebook")).To(Equal("wsd-quickstart-child-1-my-notebook"))
	g.Expect(ReleaseName("quickstart-child-1", "my-notebook")).To(Equal("wsd-quickstart-child-1-my-notebook"))
	g.Expect(ChildNamespace("my-notebook")).To(Equal("ws-my-notebook"))
	long := strings.Repeat("x", 40)
	g.Expect(len(ReleaseName(long, long))).To(BeNumerically("<=", 53), "Helm release names are at most 53 characters")
	g.Expect(len(ServiceSetName(long, long))).To(BeNumerically("<=", 63))
	g.Expect(PrerequisiteServiceSetName("c1", "cert-manager")).To(Equal("wsprereq-c1-cert-manager"))
}

func TestResolveValues(t *testing.T) {
	class := &workspacesv1.WorkspaceClass{Spec: workspacesv1.WorkspaceClassSpec{
		DefaultValues: &apiextensionsv1.JSON{Raw: []byte(`{"image":"v1","auth":{"user":"root"}}`)},
		UserFacingConfig: []workspacesv1.UserFacingConfigField{
			{HelmValuePath: "auth.password", Type: workspacesv1.UserFacingConfigSecret, Required: true},
		},
	}}
	none := func(workspacesv1.ValuesReference) ([]byte, bool, error) { return nil, false, nil }
	cases := []struct {
		name   string
		values string
		from   []workspacesv1.ValuesReference
		fetch  Fetch
		check  func(g Gomega, v *Values, err error)
	}{
		{name: "secret values are kept apart", values: `{"auth":{"password":"pw"}}`, fetch: none, check: func(g Gomega, v *Values, err error) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.Secret).To(HaveKeyWithValue("auth", HaveKeyWithValue("password", "pw")))
			g.Expect(v.Public).NotTo(HaveKey("auth"), "the user's top-level auth replaces the class's, minus the secret")
			g.Expect(v.Public).To(HaveKeyWithValue("image", "v1"))
			g.Expect(v.Public).To(HaveKey("_exalsius"))
		}},
		{name: "required value missing", values: `{}`, fetch: none, check: func(g Gomega, _ *Values, err error) {
			var fe *FieldError
			g.Expect(errors.As(err, &fe)).To(BeTrue())
			g.Expect(fe.Reason).To(Equal(workspacesv1.RequiredConfigMissingReason))
			g.Expect(fe.Message).To(ContainSubstring("auth.password"))
		}},
		{name: "valuesFrom key missing", values: `{"auth":{"password":"pw"}}`,
			from: []workspacesv1.ValuesReference{{Kind: "Secret", Name: "s"}}, fetch: none, check: func(g Gomega, _ *Values, err error) {
				var fe *FieldError
				g.Expect(errors.As(err, &fe)).To(BeTrue())
				g.Expect(fe.Field).To(Equal("spec.valuesFrom[0]"))
				g.Expect(fe.Reason).To(Equal("ValuesFromNotFound"))
			}},
		{name: "a valuesFrom Secret goes to the secret values", values: `{}`,
			from: []workspacesv1.ValuesReference{{Kind: "Secret", Name: "s"}},
			fetch: func(workspacesv1.ValuesReference) ([]byte, bool, error) {
				return []byte("auth:\n  password: from-secret\n"), true, nil
			}, check: func(g Gomega, v *Values, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(v.Secret).To(HaveKeyWithValue("auth", HaveKeyWithValue("password", "from-secret")))
			}},
		{name: "an unavailable source is recorded, not invented", values: `{}`,
			from:  []workspacesv1.ValuesReference{{Kind: "Secret", Name: "s"}},
			fetch: func(workspacesv1.ValuesReference) ([]byte, bool, error) { return nil, false, ErrSourceUnavailable },
			check: func(g Gomega, v *Values, err error) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(v.Unavailable).To(ConsistOf("spec.valuesFrom[0]"))
				g.Expect(v.Secret).To(BeEmpty())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &workspacesv1.WorkspaceDeployment{}
			obj.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(tc.values)}
			obj.Spec.ValuesFrom = tc.from
			resolved := Resources(class, obj)
			v, err := ResolveValues(class, obj, resolved, Placement(resolved), tc.fetch)
			tc.check(NewWithT(t), v, err)
		})
	}
}
