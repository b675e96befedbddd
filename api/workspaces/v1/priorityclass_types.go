package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of a priority value: Kubernetes' range for user PriorityClasses,
// so that the same numbers read the same in both.
const (
	MinWorkspacePriority = -1000000000
	MaxWorkspacePriority = 1000000000
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wpc
// +kubebuilder:printcolumn:name="Value",type=integer,JSONPath=`.value`
// +kubebuilder:printcolumn:name="Preemption",type=string,JSONPath=`.preemptionPolicy`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.description`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkspacePriorityClass names a priority that workspaces wait for GPUs
// and quota with (Apiary only): the queues of a cluster and of a
// TenantQuota serve a higher value first, and first come, first served
// within one value. A WorkspaceClass may name one as its default; a
// workspace may name one itself only where the class's namespaceSelector
// selects the workspace's namespace, so a tenant cannot give itself a
// priority the platform did not grant it. Like Kueue's
// WorkloadPriorityClass, it has its own kind rather than reusing
// Kubernetes' PriorityClasses, which the scheduler reads for pods.
type WorkspacePriorityClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the priority: higher is served first. Workspaces without a
	// priority class have 0.
	// +kubebuilder:validation:Minimum=-1000000000
	// +kubebuilder:validation:Maximum=1000000000
	// +required
	Value int32 `json:"value"`

	// Description says what the priority is for.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// NamespaceSelector selects the namespaces whose workspaces may name
	// this class in spec.priorityClassName. Unset, no workspace may name
	// it: only WorkspaceClasses give it, as their default; {} selects
	// every namespace. A WorkspaceClass's default needs no selection: the
	// platform chose it for every workspace of the class.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// PreemptionPolicy says whether a workspace of this priority that
	// cannot fit on its cluster may stop running workspaces of a lower
	// priority of its own tenant to make room: Never (the default: Apiary
	// preempts only where the platform opts in) or PreemptLowerPriority.
	// +kubebuilder:default=Never
	// +optional
	PreemptionPolicy PreemptionPolicy `json:"preemptionPolicy,omitempty"`

	// MinRuntime is how long a workspace of this priority runs, from its
	// admission, before a workspace of a higher priority may preempt it;
	// none when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	MinRuntime *metav1.Duration `json:"minRuntime,omitempty"`
}

// PreemptionPolicy says whether workspaces of a priority preempt.
// +kubebuilder:validation:Enum=Never;PreemptLowerPriority
type PreemptionPolicy string

// Preemption policies, named as Kubernetes' PriorityClass names them
// (there the default is to preempt; here it is not).
const (
	PreemptNever         PreemptionPolicy = "Never"
	PreemptLowerPriority PreemptionPolicy = "PreemptLowerPriority"
)

// +kubebuilder:object:root=true

// WorkspacePriorityClassList is a list of WorkspacePriorityClasses.
type WorkspacePriorityClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkspacePriorityClass `json:"items"`
}

// WorkspacePriority is the priority a workspace waits with.
type WorkspacePriority struct {
	// ClassName is the WorkspacePriorityClass: the workspace's own
	// spec.priorityClassName, or else its WorkspaceClass's.
	// +kubebuilder:validation:MaxLength=253
	ClassName string `json:"className"`
	// Value is the class's value when it was read.
	Value int32 `json:"value"`
}

func init() {
	SchemeBuilder.Register(&WorkspacePriorityClass{}, &WorkspacePriorityClassList{})
}
