package install

import (
	"testing"

	. "github.com/onsi/gomega"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestServiceVerdict: the states of the services installing a template, as
// kcm 1.8 to 1.12 report them.
func TestServiceVerdict(t *testing.T) {
	st := func(tmpl, state string) k0rdentv1beta1.ServiceState {
		return k0rdentv1beta1.ServiceState{Name: "r", Namespace: "ns", Template: tmpl, State: state, FailureMessage: "boom"}
	}
	const tmpl = "cert-manager-1-16-2"
	cases := []struct {
		name    string
		states  []k0rdentv1beta1.ServiceState
		verdict Verdict
		msg     string
	}{
		{"no state yet", nil, Installing, "installing"},
		{"another template's state", []k0rdentv1beta1.ServiceState{st("other", k0rdentv1beta1.ServiceStateDeployed)}, Installing, "installing"},
		{"provisioning", []k0rdentv1beta1.ServiceState{st(tmpl, k0rdentv1beta1.ServiceStateProvisioning)}, Installing, "installing"},
		{"deployed", []k0rdentv1beta1.ServiceState{st(tmpl, k0rdentv1beta1.ServiceStateDeployed)}, Satisfied, ""},
		{"failed", []k0rdentv1beta1.ServiceState{st(tmpl, k0rdentv1beta1.ServiceStateFailed)}, Failed, "failed: boom"},
		{"deleting is still on its way out", []k0rdentv1beta1.ServiceState{st(tmpl, k0rdentv1beta1.ServiceStateDeleting)}, Installing, "installing"},
		{"deleted (kcm 1.11+) is gone", []k0rdentv1beta1.ServiceState{st(tmpl, k0rdentv1beta1.ServiceStateDeleted)}, Failed, "was deleted from the cluster"},
		{"deleted beside a deployed one", []k0rdentv1beta1.ServiceState{
			st(tmpl, k0rdentv1beta1.ServiceStateDeleted), st(tmpl, k0rdentv1beta1.ServiceStateDeployed)}, Satisfied, ""},
		{"deleted beside a provisioning one", []k0rdentv1beta1.ServiceState{
			st(tmpl, k0rdentv1beta1.ServiceStateDeleted), st(tmpl, k0rdentv1beta1.ServiceStateProvisioning)}, Installing, "installing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := serviceVerdict(Check{Status: workspacesv1.PrerequisiteStatus{Name: tmpl}}, tc.states, tmpl)
			g.Expect(c.Verdict).To(Equal(tc.verdict))
			g.Expect(c.Status.Message).To(ContainSubstring(tc.msg))
			if tc.msg == "" {
				g.Expect(c.Status.Message).To(BeEmpty())
			}
		})
	}
}

// TestColonyService: a Colony's service installs a prerequisite unless kcm
// reports it Deleted.
func TestColonyService(t *testing.T) {
	g := NewWithT(t)
	st := func(ns, tmpl, state string) k0rdentv1beta1.ServiceState {
		return k0rdentv1beta1.ServiceState{Name: "cm", Namespace: ns, Template: tmpl, State: state}
	}
	g.Expect(colonyService(nil, "t")).To(BeNil())
	g.Expect(colonyService([]k0rdentv1beta1.ServiceState{st("a", "other", k0rdentv1beta1.ServiceStateDeployed)}, "t")).To(BeNil())
	g.Expect(colonyService([]k0rdentv1beta1.ServiceState{st("a", "t", k0rdentv1beta1.ServiceStateDeleted)}, "t")).To(BeNil(),
		"a Deleted service installs nothing")
	got := colonyService([]k0rdentv1beta1.ServiceState{
		st("a", "t", k0rdentv1beta1.ServiceStateDeleted), st("b", "t", k0rdentv1beta1.ServiceStateProvisioning)}, "t")
	g.Expect(got).NotTo(BeNil())
	g.Expect(got.Namespace).To(Equal("b"))
}
