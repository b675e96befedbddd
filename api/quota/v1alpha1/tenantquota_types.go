package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// WithinLimitsCondition is False while what is used exceeds a limit (after
// the quota was lowered, or a namespace joined the tenant): new admissions
// wait, nothing running is evicted.
const WithinLimitsCondition = "WithinLimits"

// TenantQuotaSpec caps what the namespaces of a tenant hold together.
type TenantQuotaSpec struct {
	// NamespaceSelector selects the tenant's namespaces by their labels. An
	// empty selector selects every namespace.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Hard are the limits, across all selected namespaces and clusters.
	// A GPU limit's count is the tenant's nominal quota of those GPUs.
	// +required
	Hard QuotaLimits `json:"hard"`

	// Cohort names the group of TenantQuotas this one borrows GPUs from and
	// lends GPUs to: GPUs of a limit that one member is entitled to and
	// does not use may be admitted to another member's workspaces, for the
	// GPU limit of the same name and the same GPUs, within each
	// borrower's borrowingLimit and each lender's lendingLimit. A lender's
	// workspace that needs its nominal GPUs back stops borrowers past their
	// minimum runtime (docs/admission.md, "Cohorts"). Empty: none.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Cohort string `json:"cohort,omitempty"`
}

// QuotaLimits are the limits of a TenantQuota; an unset limit is unlimited.
// CPU and memory limits are not negative, and are written in at most 64
// characters with an exponent of at most two digits (see PerReplicaResources).
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || (size(string(self.cpu)) <= 64 && !string(self.cpu).matches('[eE][-+]?[0-9]{3}') && !string(self.cpu).startsWith('-'))",message="cpu must not be negative, and is written in at most 64 characters with an exponent of at most two digits"
// +kubebuilder:validation:XValidation:rule="!has(self.memory) || (size(string(self.memory)) <= 64 && !string(self.memory).matches('[eE][-+]?[0-9]{3}') && !string(self.memory).startsWith('-'))",message="memory must not be negative, and is written in at most 64 characters with an exponent of at most two digits"
type QuotaLimits struct {
	// Workspaces caps the number of admitted WorkspaceDeployments.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Workspaces *int64 `json:"workspaces,omitempty"`

	// GPUs cap GPUs of an extended resource: every workspace asking for the
	// resource counts, or, with gpuModel or nodeSelector, only those whose
	// GPU selector pins that model or carries those labels.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	GPUs []GPULimit `json:"gpus,omitempty"`

	// CPU caps replicas × perReplica.cpu of the workspaces' resolved resources.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory caps replicas × perReplica.memory of the workspaces' resolved resources.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// GPULimit caps the GPUs of one extended resource, optionally of one GPU
// model or node selector.
// +kubebuilder:validation:XValidation:rule="!has(self.gpuModel) || !has(self.nodeSelector) || !('exalsius.ai/gpu-model' in self.nodeSelector) || self.nodeSelector['exalsius.ai/gpu-model'] == self.gpuModel",message="gpuModel and nodeSelector name different GPU models"
type GPULimit struct {
	// Name identifies the limit in status and in the messages of waiting workspaces.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ResourceName is the extended resource counted.
	// +kubebuilder:default="nvidia.com/gpu"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ResourceName string `json:"resourceName,omitempty"`

	// GPUModel restricts the limit to workspaces whose GPU selector pins
	// exalsius.ai/gpu-model to this model (gpuType, or gpuNodeSelector).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	GPUModel string `json:"gpuModel,omitempty"`

	// NodeSelector restricts the limit to workspaces whose GPU selector
	// carries every one of these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Count is the number of GPUs: the tenant's nominal quota of them.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int64 `json:"count"`

	// BorrowingLimit is how many GPUs beyond count the tenant may borrow
	// from its cohort. Unset: as many as the cohort lends (Kueue's meaning);
	// without a cohort, none.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BorrowingLimit *int64 `json:"borrowingLimit,omitempty"`

	// LendingLimit is how many of count's GPUs the tenant lends to its
	// cohort at most, when it does not use them. Unset: all of them.
	// +kubebuilder:validation:Minimum=0
	// +optional
	LendingLimit *int64 `json:"lendingLimit,omitempty"`
}

// QuotaUsage is what admitted workspaces use of a quota's limits.
type QuotaUsage struct {
	// Workspaces is the number of admitted workspaces.
	Workspaces int64 `json:"workspaces"`

	// GPUs is the usage of each GPU limit, by the limit's name.
	// +listType=map
	// +listMapKey=name
	// +optional
	GPUs []GPUUsage `json:"gpus,omitempty"`

	// CPU is the CPU of the admitted workspaces.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is the memory of the admitted workspaces.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// GPUUsage is the usage of one GPU limit.
type GPUUsage struct {
	// Name of the limit.
	Name string `json:"name"`
	// Count of GPUs counted against the limit: those of the tenant's
	// workspaces, borrowed ones included, and those lent.
	Count int64 `json:"count"`
	// Borrowed is how many of count the tenant's workspaces borrow from the cohort.
	// +optional
	Borrowed int64 `json:"borrowed,omitempty"`
	// Lent is how many of count are lent to other members of the cohort.
	// +optional
	Lent int64 `json:"lent,omitempty"`
}

// QuotaCharge is what one workspace holds of a quota. Apiary before 0.x
// (issue 33) listed one per admitted workspace in status.charges; it is
// kept to read those lists, which the workspaces move onto their own
// status, and as the charge checked against a quota in memory.
type QuotaCharge struct {
	// Namespace of the workspace.
	Namespace string `json:"namespace"`
	// Name of the workspace.
	Name string `json:"name"`
	// UID of the workspace.
	UID types.UID `json:"uid"`
	// GPUs is the workspace's GPU demand, replicas × perReplica.gpuCount.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUs int64 `json:"gpus,omitempty"`
	// ResourceName is the extended resource of the GPUs.
	// +optional
	ResourceName string `json:"resourceName,omitempty"`
	// Selector is the workspace's GPU node selector.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`
	// CPU of all replicas.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory of all replicas.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Borrowed is how many of the GPUs counted against each GPU limit are
	// borrowed from the quota's cohort.
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Borrowed []commonv1.LimitGPUs `json:"borrowed,omitempty"`
	// Lent makes the entry a loan to a workspace of another member of the
	// cohort: it counts these GPUs against the named GPU limits, as lent,
	// and nothing else (no place in the workspaces count, no CPU or memory).
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Lent []commonv1.LimitGPUs `json:"lent,omitempty"`
	// ChargedAt is when the charge was written.
	ChargedAt metav1.Time `json:"chargedAt"`
}

// Operations of an in-flight transition.
const (
	// ChargeOp: the quota counts the workspace with the transition's amounts.
	ChargeOp = "Charge"
	// ReleaseOp: the quota no longer counts the workspace.
	ReleaseOp = "Release"
)

// MaxInflight bounds status.inflight; a change that finds it full waits.
const MaxInflight = 128

// QuotaTransition is a change of what the quota counts of one workspace
// that the workspace has not recorded on its own status yet. While it is
// listed, it is what the quota counts of the workspace, whatever the
// workspace's record says; it goes once the workspace's record carries its
// token.
type QuotaTransition struct {
	// Namespace of the workspace.
	Namespace string `json:"namespace"`
	// Name of the workspace.
	Name string `json:"name"`
	// UID of the workspace.
	UID types.UID `json:"uid"`
	// Token identifies the change; the workspace's record carries it once written.
	// +kubebuilder:validation:MaxLength=64
	Token string `json:"token"`
	// Op is Charge or Release.
	// +kubebuilder:validation:Enum=Charge;Release
	Op string `json:"op"`
	// GPUs is the workspace's GPU demand, replicas × perReplica.gpuCount.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUs int64 `json:"gpus,omitempty"`
	// ResourceName is the extended resource of the GPUs.
	// +optional
	ResourceName string `json:"resourceName,omitempty"`
	// Selector is the workspace's GPU node selector.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`
	// CPU of all replicas.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory of all replicas.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Borrowed is how many of the GPUs counted against each GPU limit are
	// borrowed from the quota's cohort.
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Borrowed []commonv1.LimitGPUs `json:"borrowed,omitempty"`
	// Lent makes the entry a loan to a workspace of another member of the
	// cohort: it counts these GPUs against the named GPU limits, as lent,
	// and nothing else (no place in the workspaces count, no CPU or memory).
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Lent []commonv1.LimitGPUs `json:"lent,omitempty"`
	// At is when the change was written.
	At metav1.Time `json:"at"`
}

// MaxUsageDays is how many UTC days of usage a quota keeps.
const MaxUsageDays = 92

// TenantUsage is a tenant's usage: since counting began, and by UTC day.
type TenantUsage struct {
	// Since is when the first charge counted here began.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// Total is everything counted since then.
	Total commonv1.ResourceUsage `json:"total"`

	// Days are the last days with usage (UTC), oldest first, at most 92.
	// +listType=map
	// +listMapKey=date
	// +kubebuilder:validation:MaxItems=92
	// +optional
	Days []DayUsage `json:"days,omitempty"`
}

// DayUsage is the usage counted for one UTC day.
type DayUsage struct {
	// Date is the day, YYYY-MM-DD.
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	Date string `json:"date"`

	commonv1.ResourceUsage `json:",inline"`
}

// TenantQuotaStatus is the observed state of a TenantQuota.
type TenantQuotaStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled and WithinLimits.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Hard are the limits enforced, as of observedGeneration; used.gpus
	// counts its GPU limits.
	// +optional
	Hard QuotaLimits `json:"hard,omitempty"`

	// Used is what the admitted workspaces of all selected namespaces use:
	// totals, changed by each admission and release with the quota's
	// resourceVersion. Workspaces, CPU and memory are always counted.
	// +optional
	Used QuotaUsage `json:"used,omitempty"`

	// Totals is true once used is kept as totals, with each workspace's
	// share on its own status (status.quotaCharges); false on a quota last
	// written by an earlier Apiary, whose used derives from charges.
	// +optional
	Totals bool `json:"totals,omitempty"`

	// Inflight lists the changes of what the quota counts that the
	// workspaces have not recorded yet (at most 128).
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Inflight []QuotaTransition `json:"inflight,omitempty"`

	// Charges is the list of charges an earlier Apiary kept here, one per
	// admitted workspace. Each workspace moves its own charge onto its
	// status; no new entry is written.
	// +optional
	Charges []QuotaCharge `json:"charges,omitempty"`

	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt
	// annotation value handled: a requested reconcile recounts used from
	// every workspace's record.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// Usage is what the tenant's workspaces have used over time, counted
	// when a charge ends or changes, in the same write; what is charged
	// now is counted from each charge's start by whoever reads
	// (apiary usage, the apiary_tenant_*_seconds_total metrics).
	// +optional
	Usage *TenantUsage `json:"usage,omitempty"`

	// Summary is a one-line account of used against hard, for kubectl.
	// +optional
	Summary string `json:"summary,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tq
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Workspaces",type=integer,JSONPath=`.status.used.workspaces`
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Within",type=string,JSONPath=`.status.conditions[?(@.type=="WithinLimits")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TenantQuota caps what the WorkspaceDeployments of a tenant's namespaces
// may hold together. Apiary admits a workspace only when it fits every
// quota that selects its namespace; one that does not fit waits.
type TenantQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantQuotaSpec `json:"spec"`
	// Status is written by Apiary. Until then it holds observedGeneration -1
	// (as Flux's kinds do), so kstatus reads a new object as in progress.
	// +kubebuilder:default={"observedGeneration":-1}
	Status TenantQuotaStatus `json:"status,omitempty"`
}

// GetConditions returns the quota's status conditions.
func (in *TenantQuota) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the quota's status conditions.
func (in *TenantQuota) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// TenantQuotaList is a list of TenantQuotas.
type TenantQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantQuota `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantQuota{}, &TenantQuotaList{})
}
