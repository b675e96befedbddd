package standin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// TestPropertyTheUsesIndexHoldsEveryUse: whatever a ServiceSet names, every
// object enqueue's predicates say it uses is under its indexUses values, so
// listing through the index finds every ServiceSet a change concerns.
func TestPropertyTheUsesIndexHoldsEveryUse(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(33, 7))
	names := []string{"", "a", "b", "c", "a" + k0rdentv1beta1.KubeconfigSecretSuffix, "b" + k0rdentv1beta1.KubeconfigSecretSuffix}
	kinds := []string{"Secret", "ConfigMap", "ServiceTemplate", "Other"}
	pick := func(from []string) string { return from[r.IntN(len(from))] }
	for n := range 20000 {
		ss := &k0rdentv1beta1.ServiceSet{}
		ss.Spec.Cluster = pick(names[:4])
		for range r.IntN(4) {
			svc := k0rdentv1beta1.ServiceWithValues{Template: pick(names)}
			for range r.IntN(3) {
				svc.ValuesFrom = append(svc.ValuesFrom, k0rdentv1beta1.ValuesFrom{Kind: pick(kinds), Name: pick(names)})
			}
			ss.Spec.Services = append(ss.Spec.Services, svc)
		}
		indexed := usedObjects(ss)
		for kind, uses := range usesBy {
			for _, name := range names {
				if ss.Spec.Cluster != "" && uses(ss, name) {
					g.Expect(slices.Contains(indexed, useKey(kind, name))).To(BeTrue(),
						fmt.Sprintf("case %d: %s %q used by %+v but not indexed: %v", n, kind, name, ss.Spec, indexed))
				}
			}
		}
	}
}
