package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFinalizerGuardRenders: the policy that keeps Apiary's finalizers
// exempts the manager's ServiceAccount, the exempt users and groups the
// values name, and is left out when finalizerGuard.enabled is false. The
// policy's effect on a real API server is Test30_12 of test/hostile.
func TestFinalizerGuardRenders(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{"finalizerGuard": map[string]any{
		"exemptUsers": []any{"admin@example.com"}, "exemptGroups": []any{"platform-admins"}}})
	g.Expect(err).NotTo(HaveOccurred())
	policies := find(objs, "ValidatingAdmissionPolicy")
	g.Expect(policies).To(HaveLen(1))
	bindings := find(objs, "ValidatingAdmissionPolicyBinding")
	g.Expect(bindings).To(HaveLen(1))
	policy, _, _ := unstructured.NestedString(bindings[0].Object, "spec", "policyName")
	g.Expect(policy).To(Equal(policies[0].GetName()))
	conds, _, _ := unstructured.NestedSlice(policies[0].Object, "spec", "matchConditions")
	g.Expect(conds).To(HaveLen(1))
	expr := conds[0].(map[string]any)["expression"].(string)
	sa := find(objs, "ServiceAccount")[0].GetName()
	g.Expect(expr).To(ContainSubstring(`"system:serviceaccount:` + releaseNamespace + `:` + sa + `"`))
	g.Expect(expr).To(ContainSubstring(`"admin@example.com"`))
	g.Expect(expr).To(ContainSubstring(`["platform-admins"]`))

	objs, err = render(loadChart(t), releaseName, releaseNamespace, map[string]any{"finalizerGuard": map[string]any{"enabled": false}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(find(objs, "ValidatingAdmissionPolicy")).To(BeEmpty())
	g.Expect(find(objs, "ValidatingAdmissionPolicyBinding")).To(BeEmpty())

	_, err = render(loadChart(t), releaseName, releaseNamespace, map[string]any{"finalizerGuard": map[string]any{"exemptUsers": "root"}})
	g.Expect(err).To(MatchError(ContainSubstring("finalizerGuard")))
}
