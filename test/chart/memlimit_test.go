package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// GOMEMLIMIT follows the container's memory limit through the Downward API,
// unless there is no limit, it is turned off, or extraEnv sets it.
func TestGoMemLimitFollowsTheContainerLimit(t *testing.T) {
	fromLimit := &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
		ContainerName: "manager", Resource: "limits.memory"}}
	tests := []struct {
		name string
		vals map[string]any
		want *corev1.EnvVar // nil: no GOMEMLIMIT
	}{
		{"defaults", nil, &corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: fromLimit}},
		{"turned off", map[string]any{"goMemLimitFromContainer": false}, nil},
		{"no memory limit", map[string]any{"resources": map[string]any{"limits": nil}}, nil},
		{"set by extraEnv", map[string]any{"extraEnv": []any{map[string]any{"name": "GOMEMLIMIT", "value": "300MiB"}}},
			&corev1.EnvVar{Name: "GOMEMLIMIT", Value: "300MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(loadChart(t), releaseName, releaseNamespace, tt.vals)
			g.Expect(err).NotTo(HaveOccurred())
			d := convert[appsv1.Deployment](g, find(objs, "Deployment")[0])
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Name).To(Equal("manager"))
			var got []corev1.EnvVar
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					got = append(got, e)
				}
			}
			if tt.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(Equal([]corev1.EnvVar{*tt.want}))
		})
	}
}
