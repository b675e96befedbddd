package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// CredentialKind is the kind of a Credential.
	CredentialKind = "Credential"

	// CredentialFinalizer is the finalizer kcm keeps on a Credential.
	CredentialFinalizer = "k0rdent.mirantis.com/credential"

	// CredentialLabelKeyPrefix prefixes the label kcm sets (value "true") on the
	// identity objects of a Credential: <prefix>.<credential-namespace>.<credential-name>.
	CredentialLabelKeyPrefix = "k0rdent.mirantis.com/credential"
)

// CredentialSpec defines the desired state of Credential.
type CredentialSpec struct {
	// Reference to the Credential Identity (for non-Secret kinds kcm also expects
	// a Secret <name>-secret and a ConfigMap <name>-resource-template beside it).
	// +required
	IdentityRef *corev1.ObjectReference `json:"identityRef"`

	// Region specifies the region where [ClusterDeployment] resources using
	// this [Credential] will be deployed.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Region is immutable"
	// +optional
	Region string `json:"region,omitempty"`

	// Description of the [Credential] object.
	// +optional
	Description string `json:"description,omitempty"`
}

// CredentialStatus defines the observed state of Credential.
type CredentialStatus struct {
	// Conditions contains details for the current state of the Credential
	// (type CredentialReady).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Ready holds the readiness of Credentials: true iff CredentialReady is True.
	// +kubebuilder:default:=false
	// +required
	Ready bool `json:"ready"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cred
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.ready"
// +kubebuilder:printcolumn:name="Region",type="string",JSONPath=".spec.region"
// +kubebuilder:printcolumn:name="Description",type="string",JSONPath=".spec.description"

// Credential is the Schema for the credentials API
type Credential struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CredentialSpec `json:"spec"`
	// +optional
	Status CredentialStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CredentialList contains a list of Credential.
type CredentialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Credential `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Credential{}, &CredentialList{})
}
