package standin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// uses is what a ServiceSet uses, written out as kcm's behaviour reads: the
// kubeconfig Secret of its cluster, each service's template and valuesFrom
// Secrets and ConfigMaps — and nothing when it names no cluster.
func uses(ss *k0rdentv1beta1.ServiceSet, kind, name string) bool {
	if ss.Spec.Cluster == "" {
		return false
	}
	if kind == "Secret" && name == KubeconfigSecretName(ss.Spec.Cluster) {
		return true
	}
	for _, svc := range ss.Spec.Services {
		if kind == "ServiceTemplate" && svc.Template == name {
			return true
		}
		for _, v := range svc.ValuesFrom {
			if (kind == "Secret" || kind == "ConfigMap") && v.Kind == kind && v.Name == name {
				return true
			}
		}
	}
	return false
}

// TestPropertyTheUsesIndexIsExactlyWhatAServiceSetUses: for every watched
// kind and name, a ServiceSet's indexUses values hold the object exactly when
// the ServiceSet uses it, so enqueue, which lists through the index and
// filters nothing, reconciles every ServiceSet a change concerns and no other.
func TestPropertyTheUsesIndexIsExactlyWhatAServiceSetUses(t *testing.T) {
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
		for _, kind := range []string{"Secret", "ConfigMap", "ServiceTemplate"} { // the kinds enqueue watches
			for _, name := range names {
				g.Expect(slices.Contains(indexed, useKey(kind, name))).To(Equal(uses(ss, kind, name)),
					fmt.Sprintf("case %d: %s %q, spec %+v, indexed %v", n, kind, name, ss.Spec, indexed))
			}
		}
	}
}
