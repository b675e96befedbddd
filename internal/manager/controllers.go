package manager

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	clusterDeploymentKind = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ClusterDeployment"}
	serviceSetKind        = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceSet"}
	serviceTemplateKind   = schema.GroupVersionKind{Group: "k0rdent.mirantis.com", Version: "v1beta1", Kind: "ServiceTemplate"}
)

// controllers lists Apiary's controllers with the kinds each watches.
func controllers() []controllerSetup {
	return []controllerSetup{}
}
