package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleReference selects the template bundle that renders an object.
// With neither field set, the built-in default bundle for the object is used.
// +kubebuilder:validation:XValidation:rule="!(has(self.name) && has(self.configMapRef))",message="set either name or configMapRef, not both"
type BundleReference struct {
	// Name of a bundle known to the manager: a built-in bundle or one loaded
	// from the manager's --bundle-dir.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`

	// ConfigMapRef names a ConfigMap whose data keys are the bundle's files
	// (Chart.yaml, values.yaml, templates/<file>, with "/" written as "__"
	// in keys). A Colony's is in the Colony's namespace; a WorkspaceClass's,
	// which has none, beside the class's ServiceTemplate (kcm-system by
	// default).
	// +optional
	ConfigMapRef *corev1.LocalObjectReference `json:"configMapRef,omitempty"`
}

// ResourceInventory lists the objects a delivery sink holds for an owner.
type ResourceInventory struct {
	// Entries of the inventory, sorted by ID.
	// +optional
	Entries []ResourceRef `json:"entries,omitempty"`
}

// ResourceRef identifies one delivered object.
type ResourceRef struct {
	// ID is "<namespace>_<name>_<group>_<kind>", as in Flux's inventories.
	// +required
	ID string `json:"id"`

	// Version is the API version of the object.
	// +required
	Version string `json:"v"`
}

// DeliveryStatus reports what the delivery sink last did for an owner.
type DeliveryStatus struct {
	// Mode is the sink that delivered the objects: direct or git.
	// +optional
	Mode string `json:"mode,omitempty"`

	// Digest is a hash of the last rendered object set.
	// +optional
	Digest string `json:"digest,omitempty"`

	// Revision is the Git commit that holds the objects, in Git mode.
	// +optional
	Revision string `json:"revision,omitempty"`

	// SyncedRevision is the revision Flux reported applied when it first
	// included Revision, in Git mode.
	// +optional
	SyncedRevision string `json:"syncedRevision,omitempty"`

	// SyncedCommit is the commit of Revision that Flux is known to have
	// applied, in Git mode; equal to Revision once synced.
	// +optional
	SyncedCommit string `json:"syncedCommit,omitempty"`

	// LastDeliveredTime is when the object set last changed in the sink.
	// +optional
	LastDeliveredTime *metav1.Time `json:"lastDeliveredTime,omitempty"`

	// Inventory of the objects held for the owner.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`
}

// ResourceUsage is what was used over time: GPU-seconds by resource and
// model, CPU core-seconds and memory byte-seconds (Apiary only). Only
// closed intervals are counted here; a reader adds what is held now from
// the time it was admitted (docs/admission.md, "Usage").
type ResourceUsage struct {
	// GPUs are the GPU-seconds of each GPU resource and model.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	GPUs []GPUSeconds `json:"gpus,omitempty"`

	// CPU is in core-seconds.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is in byte-seconds.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// GPUSeconds are the GPU-seconds of one GPU resource and model.
type GPUSeconds struct {
	// ResourceName is the extended resource, e.g. nvidia.com/gpu.
	// +kubebuilder:validation:MaxLength=253
	ResourceName string `json:"resourceName"`

	// Model is the exalsius.ai/gpu-model the workspace asked for; empty
	// when it asked for none (or when too many models were listed).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Model string `json:"model,omitempty"`

	// Seconds is GPUs × seconds.
	// +kubebuilder:validation:Minimum=0
	Seconds int64 `json:"seconds"`
}

// LimitGPUs is a number of GPUs counted against one GPU limit of a
// TenantQuota, by the limit's name: what a charge borrows from its
// TenantQuota's cohort, or what a loan lends (docs/admission.md, "Cohorts").
type LimitGPUs struct {
	// Limit is the GPU limit's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Limit string `json:"limit"`
	// Count is the number of GPUs.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int64 `json:"count"`
}
