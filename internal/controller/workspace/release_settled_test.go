package workspace

import (
	"testing"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func TestReleaseSettled(t *testing.T) {
	set := func(states ...string) *k0rdentv1beta1.ServiceSet {
		ss := &k0rdentv1beta1.ServiceSet{}
		for i, s := range states {
			ss.Status.Services = append(ss.Status.Services, k0rdentv1beta1.ServiceState{Name: string(rune('a' + i)), State: s})
		}
		return ss
	}
	tests := []struct {
		name         string
		old, updated *k0rdentv1beta1.ServiceSet
		want         bool
	}{
		{"no state yet", set(), set(), false},
		{"provisioning", set(), set(k0rdentv1beta1.ServiceStateProvisioning), false},
		{"deployed", set(k0rdentv1beta1.ServiceStateProvisioning), set(k0rdentv1beta1.ServiceStateDeployed), true},
		{"deployed at once", set(), set(k0rdentv1beta1.ServiceStateDeployed), true},
		{"failed", set(k0rdentv1beta1.ServiceStateProvisioning), set(k0rdentv1beta1.ServiceStateFailed), true},
		{"still deployed", set(k0rdentv1beta1.ServiceStateDeployed), set(k0rdentv1beta1.ServiceStateDeployed), false},
		{"a second service deployed", set(k0rdentv1beta1.ServiceStateDeployed, k0rdentv1beta1.ServiceStateProvisioning),
			set(k0rdentv1beta1.ServiceStateDeployed, k0rdentv1beta1.ServiceStateDeployed), true},
		{"deployed again after a failure", set(k0rdentv1beta1.ServiceStateFailed), set(k0rdentv1beta1.ServiceStateDeployed), true},
		{"provisioning again", set(k0rdentv1beta1.ServiceStateDeployed), set(k0rdentv1beta1.ServiceStateProvisioning), false},
		{"deleting", set(k0rdentv1beta1.ServiceStateDeployed), set(k0rdentv1beta1.ServiceStateDeleting), false},
		{"deleted (kcm 1.11+)", set(k0rdentv1beta1.ServiceStateDeleting), set(k0rdentv1beta1.ServiceStateDeleted), true},
		{"still deleted", set(k0rdentv1beta1.ServiceStateDeleted), set(k0rdentv1beta1.ServiceStateDeleted), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releaseSettled(tt.old, tt.updated); got != tt.want {
				t.Errorf("releaseSettled = %v, want %v", got, tt.want)
			}
		})
	}
	if releaseSettled(&k0rdentv1beta1.ClusterDeployment{}, set()) {
		t.Error("an object that is not a ServiceSet settles nothing")
	}
}
