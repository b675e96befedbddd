package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// GPUVendor is the GPU vendor a workspace chart is built for.
// +kubebuilder:validation:Enum=NVIDIA;AMD
type GPUVendor string

// GPU vendors.
const (
	GPUVendorNVIDIA GPUVendor = "NVIDIA"
	GPUVendorAMD    GPUVendor = "AMD"
)

// WorkspaceResourceSpec is the shape of a workspace: how many replicas and
// what each needs. On a class it holds defaults, on a deployment overrides
// (field by field), and on a deployment's status the resolved values.
type WorkspaceResourceSpec struct {
	// Replicas is the number of pod-shaped instances; 1 when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PerReplica is what each replica needs.
	// +optional
	PerReplica *PerReplicaResources `json:"perReplica,omitempty"`
}

// PerReplicaResources is what one replica of a workspace needs. The bounds
// are internal/resources.DefaultLimits: they refuse only what no workspace
// asks for, so that no product or sum of them overflows. Each bound first
// checks the quantity's shape (at most 64 characters, an exponent of at
// most two digits): the CEL quantity library, like Apiary's own decoding,
// would otherwise build 10^n for an exponent n of the tenant's choosing.
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !string(self.cpu).startsWith('-')",message="cpu must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.memory) || !string(self.memory).startsWith('-')",message="memory must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !string(self.storage).startsWith('-')",message="storage must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || (size(string(self.cpu)) <= 64 && !string(self.cpu).matches('[eE][-+]?[0-9]{3}') && quantity(string(self.cpu)).compareTo(quantity('4096')) <= 0)",message="cpu must be at most 4096 per replica, written in at most 64 characters with an exponent of at most two digits"
// +kubebuilder:validation:XValidation:rule="!has(self.memory) || (size(string(self.memory)) <= 64 && !string(self.memory).matches('[eE][-+]?[0-9]{3}') && quantity(string(self.memory)).compareTo(quantity('64Ti')) <= 0)",message="memory must be at most 64Ti per replica, written in at most 64 characters with an exponent of at most two digits"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || (size(string(self.storage)) <= 64 && !string(self.storage).matches('[eE][-+]?[0-9]{3}') && quantity(string(self.storage)).compareTo(quantity('1Pi')) <= 0)",message="storage must be at most 1Pi per replica, written in at most 64 characters with an exponent of at most two digits"
type PerReplicaResources struct {
	// CPU per replica.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory per replica.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Storage is the persistent storage per replica.
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty"`

	// GPUCount is the number of GPUs per replica: one pod, on one node.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	GPUCount *int32 `json:"gpuCount,omitempty"`

	// GPUVendor is the vendor the chart is built for (CUDA or ROCm).
	// +optional
	GPUVendor *GPUVendor `json:"gpuVendor,omitempty"`

	// GPUType picks nodes labelled exalsius.ai/gpu-model=<gpuType>. Only a
	// WorkspaceDeployment may set it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	GPUType *string `json:"gpuType,omitempty"`

	// GPUNodeSelector is an exact-match node-label selector for the GPU
	// nodes; on a key collision it wins over gpuType. Only a
	// WorkspaceDeployment may set it.
	// +optional
	GPUNodeSelector map[string]string `json:"gpuNodeSelector,omitempty"`
}

// InjectionPath is a dot-separated Helm values path; segments holding dots or
// slashes are written in quoted brackets, e.g. a.b["nvidia.com/gpu"].
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=1024
type InjectionPath string

// ResourceInjectionMap lists extra Helm values paths that receive the
// resolved resources, besides the standard _exalsius.resources path.
type ResourceInjectionMap struct {
	// +listType=set
	// +optional
	Replicas []InjectionPath `json:"replicas,omitempty"`
	// +listType=set
	// +optional
	CPU []InjectionPath `json:"cpu,omitempty"`
	// +listType=set
	// +optional
	Memory []InjectionPath `json:"memory,omitempty"`
	// +listType=set
	// +optional
	Storage []InjectionPath `json:"storage,omitempty"`
	// +listType=set
	// +optional
	GPUCount []InjectionPath `json:"gpuCount,omitempty"`
	// +listType=set
	// +optional
	GPUVendor []InjectionPath `json:"gpuVendor,omitempty"`
	// +listType=set
	// +optional
	GPUType []InjectionPath `json:"gpuType,omitempty"`
}

// ResourceTotals is an amount of cluster resources.
type ResourceTotals struct {
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	Memory *resource.Quantity `json:"memory,omitempty"`
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	Storage *resource.Quantity `json:"storage,omitempty"`
	// +optional
	GPUCount int32 `json:"gpuCount,omitempty"`
	// +optional
	GPUVendor string `json:"gpuVendor,omitempty"`
	// +optional
	GPUType string `json:"gpuType,omitempty"`
}
