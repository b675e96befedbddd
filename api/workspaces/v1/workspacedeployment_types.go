package v1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// WorkspaceDeploymentFinalizer orders a workspace's deletion. It is the
// exalsius operator's name, so workspaces move between the two controllers.
const WorkspaceDeploymentFinalizer = "workspaces.exalsius.ai/deployment"

// ClusterDeploymentReference points at the k0rdent ClusterDeployment that
// hosts a workspace.
type ClusterDeploymentReference struct {
	// Name of the ClusterDeployment.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the ClusterDeployment; the workspace's namespace when unset.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ValuesReference takes Helm values from a Secret or ConfigMap in the
// workspace's namespace. Values from a Secret never appear inline in the
// ServiceSet.
type ValuesReference struct {
	// Kind of the object: Secret or ConfigMap.
	// +required
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	Kind string `json:"kind"`

	// Name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// ValuesKey is the data key holding the values; values.yaml when unset.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[\-._a-zA-Z0-9]+$`
	// +optional
	ValuesKey string `json:"valuesKey,omitempty"`

	// TargetPath is a values path that receives the key's content verbatim,
	// instead of merging it as a YAML document.
	// +kubebuilder:validation:MaxLength=250
	// +optional
	TargetPath string `json:"targetPath,omitempty"`

	// Optional tolerates a missing object or key.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// WorkspaceDeploymentSpec asks for one workspace of a class on one cluster.
type WorkspaceDeploymentSpec struct {
	// WorkspaceClassRef is the name of the WorkspaceClass, pinned exactly.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	WorkspaceClassRef string `json:"workspaceClassRef"`

	// ClusterDeploymentRef is the target child cluster.
	// +required
	ClusterDeploymentRef ClusterDeploymentReference `json:"clusterDeploymentRef"`

	// Resources override the class's default resources field by field.
	// +optional
	Resources *WorkspaceResourceSpec `json:"resources,omitempty"`

	// Values are Helm values merged over the class's defaultValues.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom takes further values from Secrets and ConfigMaps, merged
	// over values in order.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// Suspend stops the reconciliation of the workspace; deletion still proceeds.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Lifecycle stops the workspace, keeping its volumes, and sets when it
	// expires (Apiary only).
	// +optional
	Lifecycle *WorkspaceLifecycle `json:"lifecycle,omitempty"`

	// PriorityClassName names the WorkspacePriorityClass the workspace
	// waits for GPUs and quota with, in place of its class's default
	// (Apiary only). The priority class must select the workspace's
	// namespace; otherwise the workspace fails with PriorityNotAllowed.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// WorkspacePhase summarises the lifecycle of a workspace.
// +kubebuilder:validation:Enum=Pending;InstallingPrerequisites;Waiting;Deploying;Running;Stopped;Failed;Deleting
type WorkspacePhase string

// Workspace phases.
const (
	PhasePending                 WorkspacePhase = "Pending"
	PhaseInstallingPrerequisites WorkspacePhase = "InstallingPrerequisites"
	PhaseWaiting                 WorkspacePhase = "Waiting"
	PhaseDeploying               WorkspacePhase = "Deploying"
	PhaseRunning                 WorkspacePhase = "Running"
	// PhaseStopped is a workspace whose pods are gone and whose namespace
	// and volumes stay (spec.lifecycle.stopped, expiry or idle culling).
	PhaseStopped  WorkspacePhase = "Stopped"
	PhaseFailed   WorkspacePhase = "Failed"
	PhaseDeleting WorkspacePhase = "Deleting"
)

// PrerequisitePhase is the install state of a prerequisite.
// +kubebuilder:validation:Enum=Pending;Installing;Satisfied;Failed
type PrerequisitePhase string

// Prerequisite phases.
const (
	PrerequisitePending    PrerequisitePhase = "Pending"
	PrerequisiteInstalling PrerequisitePhase = "Installing"
	PrerequisiteSatisfied  PrerequisitePhase = "Satisfied"
	PrerequisiteFailed     PrerequisitePhase = "Failed"
)

// PrerequisiteSource says who provides a prerequisite.
// +kubebuilder:validation:Enum=workspace;colony
type PrerequisiteSource string

// Prerequisite sources.
const (
	PrerequisiteSourceWorkspace PrerequisiteSource = "workspace"
	PrerequisiteSourceColony    PrerequisiteSource = "colony"
)

// PrerequisiteStatus is the state of one prerequisite on the target cluster.
type PrerequisiteStatus struct {
	// Name of the ServiceTemplate.
	Name string `json:"name"`
	// +optional
	Phase PrerequisitePhase `json:"phase,omitempty"`
	// +optional
	Source PrerequisiteSource `json:"source,omitempty"`
	// Namespace where the prerequisite lives on the child cluster.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// FeasibilityStatus compares a workspace's demand with the free capacity of
// its cluster. It is for observability only.
type FeasibilityStatus struct {
	Fits        bool           `json:"fits"`
	EvaluatedAt metav1.Time    `json:"evaluatedAt"`
	Demanded    ResourceTotals `json:"demanded"`
	Available   ResourceTotals `json:"available"`
	// +optional
	Missing *ResourceTotals `json:"missing,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// AccessEntry is a resolved access endpoint of a workspace.
type AccessEntry struct {
	// +required
	Name string `json:"name"`
	// +required
	Protocol AccessProtocol `json:"protocol"`
	// URL of the endpoint; empty while it cannot be resolved.
	// +optional
	URL string `json:"url,omitempty"`
	// Ready is true when the route is programmed.
	Ready bool `json:"ready"`
	// +optional
	Message string `json:"message,omitempty"`
}

// PortAssignment is a port of the tenant Gateway's pool held by one TCP or
// SSH endpoint of a workspace.
type PortAssignment struct {
	// Endpoint is the name of the access endpoint.
	// +required
	Endpoint string `json:"endpoint"`
	// Listener is the name of the Gateway's TCP listener (the route's sectionName).
	// +required
	Listener string `json:"listener"`
	// Port of the listener.
	// +required
	Port int32 `json:"port"`
}

// WorkspaceRoutesStatus is Apiary's record of the routes that publish a
// workspace's access endpoints on its regional cluster. The exalsius
// operator has no such field: it reads its routes back from the cluster.
type WorkspaceRoutesStatus struct {
	// Cluster is the regional ClusterDeployment that holds the routes, as namespace/name.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// Gateway is the tenant Gateway the routes attach to, as namespace/name.
	// +optional
	Gateway string `json:"gateway,omitempty"`

	// Ports are the pool ports held by the workspace's TCP and SSH
	// endpoints; an endpoint keeps its port for the workspace's life.
	// +listType=map
	// +listMapKey=endpoint
	// +optional
	Ports []PortAssignment `json:"ports,omitempty"`

	// Hosts are the host names held by the workspace's HTTP endpoints on
	// the tenant Gateway; another workspace whose endpoint needs one waits
	// (HostNameTaken) until the workspace goes.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	Hosts []string `json:"hosts,omitempty"`

	// Delivery reports the route objects delivered to the regional cluster.
	// +optional
	Delivery *commonv1.DeliveryStatus `json:"delivery,omitempty"`
}

// WorkspaceAdmission is Apiary's record of a workspace's admission: the GPU
// request that passed the gate, the nodes its replicas' GPUs are reserved
// on, and the TenantQuotas it is charged to. It is written before anything
// is delivered for the request, so that a restarted manager recovers every
// admission before it admits anything new. The exalsius operator has no
// such field: it reserves nothing.
type WorkspaceAdmission struct {
	// Cluster is the ClusterDeployment, as namespace/name.
	// +required
	Cluster string `json:"cluster"`

	// ResourceName is the GPU extended resource admitted; empty without GPUs.
	// +optional
	ResourceName string `json:"resourceName,omitempty"`

	// GPUsPerReplica is the number of GPUs each replica takes.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	GPUsPerReplica int64 `json:"gpusPerReplica,omitempty"`

	// Replicas is the number of replicas admitted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Selector is the GPU node selector admitted.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`

	// Placement lists the nodes that hold the replicas' GPUs, in replica order.
	// +listType=atomic
	// +optional
	Placement []GPUPlacement `json:"placement,omitempty"`

	// CPU and Memory are the totals of all replicas, as charged to quotas.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(string(self)) <= 64 && !string(self).matches('[eE][-+]?[0-9]{3}')",message="must be a quantity written in at most 64 characters with an exponent of at most two digits"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Quotas names the TenantQuotas the workspace is charged to.
	// +listType=set
	// +optional
	Quotas []string `json:"quotas,omitempty"`

	// AdmittedAt is when the request passed the gate.
	// +required
	AdmittedAt metav1.Time `json:"admittedAt"`
}

// WorkspaceQuotaCharge is a workspace's share of one TenantQuota's totals.
// It is written after the quota's totals counted it, with the token of the
// quota's in-flight entry for that change: a quota entry and a record with
// the same token say the change is complete.
type WorkspaceQuotaCharge struct {
	// Quota is the TenantQuota's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Quota string `json:"quota"`
	// QuotaUID is the TenantQuota's UID: a record of a quota deleted and
	// created again under the same name counts nothing.
	// +required
	QuotaUID types.UID `json:"quotaUID"`
	// Token is the token of the quota's in-flight entry for this change.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Token string `json:"token"`
	// Released is true once the quota no longer counts the workspace.
	// +optional
	Released bool `json:"released,omitempty"`
	// GPUs is the GPU demand of all replicas; 0 for a stopped workspace,
	// which holds only its place in the workspaces count.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUs int64 `json:"gpus,omitempty"`
	// ResourceName is the extended resource of the GPUs.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ResourceName string `json:"resourceName,omitempty"`
	// Selector is the GPU node selector.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`
	// CPU of all replicas.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory of all replicas.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Borrowed is how many of the GPUs counted against each of the quota's
	// GPU limits are borrowed from its cohort (docs/admission.md, "Cohorts").
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Borrowed []commonv1.LimitGPUs `json:"borrowed,omitempty"`
	// Lent is set on the record of a loan: the quota, another member of
	// the cohort, lends the workspace these GPUs of its GPU limits.
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Lent []commonv1.LimitGPUs `json:"lent,omitempty"`
	// Since is when the quota began to count this share (its usage is
	// counted from then, docs/admission.md "Usage").
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// GPUPlacement reserves the GPUs of consecutive replicas on one node.
type GPUPlacement struct {
	// Node is the node's name on the child cluster.
	// +required
	Node string `json:"node"`
	// Replicas is the number of replicas placed on it.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Replicas int32 `json:"replicas"`
}

// ServiceSetSnapshot records the state of a workspace's ServiceSet.
type ServiceSetSnapshot struct {
	Name     string `json:"name"`
	Deployed bool   `json:"deployed"`
	// +optional
	Services []ServiceSnapshot `json:"services,omitempty"`
}

// ServiceSnapshot records the state of one service of a ServiceSet.
type ServiceSnapshot struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// +optional
	FailureMessage string `json:"failureMessage,omitempty"`
}

// EventSnapshot records one event of a workspace.
type EventSnapshot struct {
	// +optional
	LastSeen metav1.Time `json:"lastSeen,omitempty"`
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// FailureContext is what was seen when a workspace failed.
type FailureContext struct {
	// PhaseWhenFailed is the phase the workspace was in.
	// +optional
	PhaseWhenFailed WorkspacePhase `json:"phaseWhenFailed,omitempty"`
	// Reason mirrors the failing condition's reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// ServiceSetStatus is a snapshot of the workspace's ServiceSet.
	// +optional
	ServiceSetStatus *ServiceSetSnapshot `json:"serviceSetStatus,omitempty"`
	// RecentEvents are the newest events of the workspace, at most five.
	// +kubebuilder:validation:MaxItems=5
	// +optional
	RecentEvents []EventSnapshot `json:"recentEvents,omitempty"`
}

// WorkspaceDeploymentStatus is the observed state of a WorkspaceDeployment.
type WorkspaceDeploymentStatus struct {
	// Phase summarises the workspace's lifecycle.
	// +optional
	Phase WorkspacePhase `json:"phase,omitempty"`

	// Conditions: Ready, Reconciling, Stalled and the domain conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ServiceEntryName is the Helm release and ServiceSet entry name.
	// +optional
	ServiceEntryName string `json:"serviceEntryName,omitempty"`

	// ResolvedResources are the effective resources after the merge.
	// +optional
	ResolvedResources *WorkspaceResourceSpec `json:"resolvedResources,omitempty"`

	// Prerequisites reports each prerequisite of the class.
	// +listType=map
	// +listMapKey=name
	// +optional
	Prerequisites []PrerequisiteStatus `json:"prerequisites,omitempty"`

	// Feasibility compares the demand with the cluster's free capacity.
	// +optional
	Feasibility *FeasibilityStatus `json:"feasibility,omitempty"`

	// Admission records the request that passed the gate (Apiary only).
	// +optional
	Admission *WorkspaceAdmission `json:"admission,omitempty"`

	// QuotaCharges records what the workspace holds of each TenantQuota
	// that counts it (Apiary only): the quota keeps totals, the workspace
	// its own share (see docs/admission.md, "the ledger").
	// +listType=map
	// +listMapKey=quota
	// +kubebuilder:validation:MaxItems=32
	// +optional
	QuotaCharges []WorkspaceQuotaCharge `json:"quotaCharges,omitempty"`

	// Usage is what the workspace's admissions have used, counted when an
	// admission ends or changes, in the same write; the admission in force
	// counts from its admittedAt (Apiary only).
	// +optional
	Usage *commonv1.ResourceUsage `json:"usage,omitempty"`

	// Access lists the workspace's resolved endpoints.
	// +listType=map
	// +listMapKey=name
	// +optional
	Access []AccessEntry `json:"access,omitempty"`

	// FailureContext is what was seen when the workspace failed.
	// +optional
	FailureContext *FailureContext `json:"failureContext,omitempty"`

	// Message is a human-readable detail of the phase.
	// +optional
	Message string `json:"message,omitempty"`

	// Delivery reports the objects delivered for the workspace.
	// +optional
	Delivery *commonv1.DeliveryStatus `json:"delivery,omitempty"`

	// Routes records the routes that publish the access endpoints on the
	// regional cluster (Apiary only).
	// +optional
	Routes *WorkspaceRoutesStatus `json:"routes,omitempty"`

	// Lifecycle records the workspace's stops, starts, expiry and activity (Apiary only).
	// +optional
	Lifecycle *WorkspaceLifecycleStatus `json:"lifecycle,omitempty"`

	// Priority is the priority the workspace waits with, when it has a
	// priority class (Apiary only).
	// +optional
	Priority *WorkspacePriority `json:"priority,omitempty"`

	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt
	// annotation value the controller handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wsd
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.workspaceClassRef`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterDeploymentRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the workspace is not ready (what it waits for, or why it failed), or Stopped"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.access[0].url`
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.status.priority.value`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.lifecycle.expiresAt`,description="When the workspace expires (UTC)",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 60",message="workspace name must be at most 60 characters: it becomes the ws-<name> namespace on the child cluster"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="workspace name must be a lowercase DNS-1123 label (a-z, 0-9, '-'): it becomes the ws-<name> namespace and a host name"

// WorkspaceDeployment asks for one instance of a WorkspaceClass on one k0rdent
// ClusterDeployment.
type WorkspaceDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WorkspaceDeploymentSpec `json:"spec"`
	// Status is written by Apiary. Until then it holds observedGeneration -1
	// (as Flux's kinds do), so kstatus reads a new object as in progress.
	// +kubebuilder:default={"observedGeneration":-1}
	Status WorkspaceDeploymentStatus `json:"status,omitempty"`
}

// GetConditions returns the workspace's status conditions.
func (in *WorkspaceDeployment) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the workspace's status conditions.
func (in *WorkspaceDeployment) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// WorkspaceDeploymentList is a list of WorkspaceDeployments.
type WorkspaceDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkspaceDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkspaceDeployment{}, &WorkspaceDeploymentList{})
}
