package values

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMergeResources(t *testing.T) {
	tests := []struct {
		name        string
		class, user string
		want        string
	}{
		{
			name: "nothing set gives one replica",
			want: `{"replicas": 1}`,
		},
		{
			name:  "class defaults without overrides",
			class: `{replicas: 2, perReplica: {cpu: "2", memory: 4Gi, storage: 10Gi, gpuCount: 1, gpuVendor: NVIDIA}}`,
			want:  `{"replicas": 2, "perReplica": {"cpu": "2", "memory": "4Gi", "storage": "10Gi", "gpuCount": 1, "gpuVendor": "NVIDIA"}}`,
		},
		{
			name:  "a user field replaces only that field",
			class: `{replicas: 2, perReplica: {cpu: "2", memory: 4Gi}}`,
			user:  `{perReplica: {cpu: 500m}}`,
			want:  `{"replicas": 2, "perReplica": {"cpu": "500m", "memory": "4Gi"}}`,
		},
		{
			name:  "every user field replaces the class's",
			class: `{replicas: 2, perReplica: {cpu: "2", memory: 4Gi, storage: 1Gi, gpuCount: 1, gpuVendor: NVIDIA}}`,
			user:  `{replicas: 3, perReplica: {cpu: "8", memory: 32Gi, storage: 100Gi, gpuCount: 4, gpuVendor: AMD, gpuType: MI300X, gpuNodeSelector: {zone: a}}}`,
			want: `{"replicas": 3, "perReplica": {"cpu": "8", "memory": "32Gi", "storage": "100Gi", "gpuCount": 4,
				"gpuVendor": "AMD", "gpuType": "MI300X", "gpuNodeSelector": {"zone": "a"}}}`,
		},
		{
			name:  "replicas default to 1 when the class leaves them unset",
			class: `{perReplica: {cpu: "1"}}`,
			want:  `{"replicas": 1, "perReplica": {"cpu": "1"}}`,
		},
		{
			name:  "user replicas win over the class",
			class: `{replicas: 2}`,
			user:  `{replicas: 5}`,
			want:  `{"replicas": 5}`,
		},
		{
			name:  "gpuCount of 0 is an override",
			class: `{perReplica: {gpuCount: 2, gpuVendor: NVIDIA}}`,
			user:  `{perReplica: {gpuCount: 0}}`,
			want:  `{"replicas": 1, "perReplica": {"gpuCount": 0, "gpuVendor": "NVIDIA"}}`,
		},
		{
			name:  "the class vendor is inherited",
			class: `{perReplica: {gpuCount: 1, gpuVendor: AMD}}`,
			user:  `{perReplica: {gpuCount: 2, gpuType: MI300X}}`,
			want:  `{"replicas": 1, "perReplica": {"gpuCount": 2, "gpuVendor": "AMD", "gpuType": "MI300X"}}`,
		},
		{
			name:  "gpuType and gpuNodeSelector are never taken from the class",
			class: `{perReplica: {gpuCount: 1, gpuType: H100, gpuNodeSelector: {zone: a}}}`,
			want:  `{"replicas": 1, "perReplica": {"gpuCount": 1}}`,
		},
		{
			name:  "a class holding only gpuType leaves no perReplica",
			class: `{perReplica: {gpuType: H100}}`,
			want:  `{"replicas": 1}`,
		},
		{
			name:  "the user's gpuNodeSelector replaces the class's whole",
			class: `{perReplica: {gpuNodeSelector: {zone: a, pool: gpu}}}`,
			user:  `{perReplica: {gpuNodeSelector: {zone: b}}}`,
			want:  `{"replicas": 1, "perReplica": {"gpuNodeSelector": {"zone": "b"}}}`,
		},
		{
			name: "an empty user gpuNodeSelector is dropped",
			user: `{perReplica: {gpuNodeSelector: {}}}`,
			want: `{"replicas": 1}`,
		},
		{
			name:  "an empty user perReplica keeps the class's",
			class: `{perReplica: {memory: 1Gi}}`,
			user:  `{perReplica: {}}`,
			want:  `{"replicas": 1, "perReplica": {"memory": "1Gi"}}`,
		},
		{
			name: "user fields without class defaults",
			user: `{perReplica: {gpuCount: 1, gpuType: H100}}`,
			want: `{"replicas": 1, "perReplica": {"gpuCount": 1, "gpuType": "H100"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			class, user := spec(t, tt.class), spec(t, tt.user)
			classBefore, userBefore := js(t, class), js(t, user)

			got := MergeResources(class, user)
			g.Expect(js(t, got)).To(MatchJSON(tt.want))

			// The result shares nothing with the inputs.
			if got.PerReplica != nil {
				if got.PerReplica.CPU != nil {
					got.PerReplica.CPU.Add(*q("1"))
				}
				if got.PerReplica.GPUCount != nil {
					*got.PerReplica.GPUCount = 99
				}
				if got.PerReplica.GPUNodeSelector != nil {
					got.PerReplica.GPUNodeSelector["zone"] = "changed"
				}
			}
			*got.Replicas = 42
			g.Expect(js(t, class)).To(Equal(classBefore), "class modified")
			g.Expect(js(t, user)).To(Equal(userBefore), "user modified")
		})
	}
}
