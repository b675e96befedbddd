package delivery

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// holds reports whether the live object m (see toMap) has every field of
// want, a desired object of kind gvk. Most objects match as they are; only
// when they do not is want normalised like the live object and compared
// again.
func (d *Direct) holds(gvk schema.GroupVersionKind, want, m map[string]any) bool {
	return canon.Subset(want, m) || canon.Subset(d.comparable(gvk, want), m)
}

// comparable returns a desired object m of kind gvk in the form the live
// object is compared with: Secret stringData folded into data and, for
// kinds of the scheme, only the fields the Go type holds.
func (d *Direct) comparable(gvk schema.GroupVersionKind, m map[string]any) map[string]any {
	if canon.IsSecret(gvk) {
		m = canon.SecretStringDataToData(m)
	}
	if !d.scheme.Recognizes(gvk) {
		return m
	}
	typed, err := d.scheme.New(gvk)
	if err != nil {
		return m
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed); err != nil {
		return m
	}
	rt, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return m
	}
	if r, ok := canon.Restrict(m, rt).(map[string]any); ok {
		return r
	}
	return m
}
