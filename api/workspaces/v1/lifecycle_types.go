package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkspaceLifecycle is what a workspace asks of its own lifecycle: to be
// stopped, and when it ends (Apiary only; the exalsius operator ignores
// it). A stopped workspace keeps its namespace and volumes on the child
// cluster and gives back its GPUs, its quota charge and its URLs.
// +kubebuilder:validation:XValidation:rule="!(has(self.expireAt) && has(self.lifetime))",message="set expireAt or lifetime, not both"
type WorkspaceLifecycle struct {
	// Stopped asks for the workspace's pods to go away while its namespace
	// and volumes stay. Setting it back to false starts the workspace again:
	// it queues for GPUs and quota like a new request, from the time the
	// start is seen. Apiary sets it when it culls an idle workspace.
	// +optional
	Stopped bool `json:"stopped,omitempty"`

	// ExpireAt is when the workspace ends; its class's expiryPolicy says
	// whether it is then stopped or deleted (the exalsius API's
	// to_be_deleted_at).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	ExpireAt *metav1.Time `json:"expireAt,omitempty"`

	// Lifetime is how long after its creation the workspace ends.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30m or 8h, below 2562047h"
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`
}

// ExpiryPolicy says what happens to a workspace when it expires.
// +kubebuilder:validation:Enum=Stop;Delete
type ExpiryPolicy string

// Expiry policies.
const (
	// ExpiryStop stops an expired workspace; it stays stopped until its
	// expiry moves.
	ExpiryStop ExpiryPolicy = "Stop"
	// ExpiryDelete deletes an expired workspace, its volumes with it.
	ExpiryDelete ExpiryPolicy = "Delete"
)

// ClassLifecycle bounds the life of a class's workspaces and culls the
// idle ones (Apiary only).
type ClassLifecycle struct {
	// DefaultLifetime applies to workspaces that set neither expireAt nor lifetime.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30m or 8h, below 2562047h"
	DefaultLifetime *metav1.Duration `json:"defaultLifetime,omitempty"`

	// MaxLifetime caps every workspace's life, whatever it asks for.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30m or 8h, below 2562047h"
	MaxLifetime *metav1.Duration `json:"maxLifetime,omitempty"`

	// ExpiryPolicy is what expiry does: Stop (the default) or Delete.
	// +kubebuilder:default=Stop
	// +optional
	ExpiryPolicy ExpiryPolicy `json:"expiryPolicy,omitempty"`

	// ExpiryWarning is how long before expiry the workspace gets a Warning
	// event and the ExpiresSoon condition; one hour when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	ExpiryWarning *metav1.Duration `json:"expiryWarning,omitempty"`

	// Idle stops workspaces that have been idle for a while; off when unset.
	// +optional
	Idle *IdlePolicy `json:"idle,omitempty"`

	// AfterPreemption is what a preempted workspace of the class does once
	// it stopped: Requeue (the default) queues it again on its own; Stay
	// keeps it stopped until its user starts it.
	// +optional
	AfterPreemption AfterPreemption `json:"afterPreemption,omitempty"`
}

// IdlePolicy stops a workspace once it has been idle for After, and has
// run for at least MinRuntime. A workspace whose activity cannot be read
// is never culled. With the Prometheus source After is at least 1m, the
// shortest window the source reads GPU utilisation over.
// +kubebuilder:validation:XValidation:rule="!has(self.source.prometheus) || duration(self.after) >= duration('1m')",message="after must be at least 1m with the prometheus source (its shortest utilisation window)",reason=FieldValueInvalid,fieldPath=".after"
type IdlePolicy struct {
	// After is how long a workspace must be idle before it is stopped.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	After metav1.Duration `json:"after"`

	// MinRuntime is how long a workspace runs before it may be culled;
	// After when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	MinRuntime *metav1.Duration `json:"minRuntime,omitempty"`

	// Source is where the workspace's last activity is read.
	// +required
	Source ActivitySource `json:"source"`
}

// ActivitySource names where a workspace's last activity is read: its own
// endpoint, reached through the child cluster's API server, or the
// Prometheus the manager is configured with (GPU utilisation from the DCGM
// exporter). Exactly one is set.
// +kubebuilder:validation:XValidation:rule="has(self.endpoint) != has(self.prometheus)",message="set exactly one of endpoint and prometheus"
type ActivitySource struct {
	// Endpoint reads the activity from one of the class's access endpoints.
	// +optional
	Endpoint *EndpointActivity `json:"endpoint,omitempty"`

	// Prometheus reads GPU utilisation of the workspace's namespace.
	// +optional
	Prometheus *PrometheusActivity `json:"prometheus,omitempty"`
}

// ActivityFormat is the activity document an endpoint serves.
// +kubebuilder:validation:Enum=JupyterStatus;CodeServerHealthz
type ActivityFormat string

// Activity formats.
const (
	// ActivityJupyterStatus is the Jupyter server's /api/status (last_activity).
	ActivityJupyterStatus ActivityFormat = "JupyterStatus"
	// ActivityCodeServerHealthz is code-server's /healthz (lastHeartbeat).
	ActivityCodeServerHealthz ActivityFormat = "CodeServerHealthz"
)

// EndpointActivity reads a workspace's activity from its own server.
type EndpointActivity struct {
	// Endpoint is the name of one of the class's accessEndpoints.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Endpoint string `json:"endpoint"`

	// Format of the document the endpoint serves.
	// +required
	Format ActivityFormat `json:"format"`

	// Path of the document; the format's usual path when unset.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9/_.\-]*$`
	// +optional
	Path string `json:"path,omitempty"`

	// TokenSecret names a Secret in the workspace's namespace on the child
	// cluster whose key holds the server's token, sent as ?token=.
	// +optional
	TokenSecret *SecretKeyRef `json:"tokenSecret,omitempty"`
}

// SecretKeyRef is one key of a Secret.
type SecretKeyRef struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PrometheusActivity counts a workspace active while the GPU utilisation
// of its namespace reaches a threshold.
type PrometheusActivity struct {
	// ThresholdPercent is the utilisation below which the GPUs count as idle; 5 when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThresholdPercent int32 `json:"thresholdPercent,omitempty"`
}

// StopReason says why a workspace is stopped.
// +kubebuilder:validation:Enum=Requested;Expired;Idle;Preempted
type StopReason string

// Stop reasons.
const (
	StopRequested StopReason = "Requested"
	StopExpired   StopReason = "Expired"
	StopIdle      StopReason = "Idle"
	// StopPreempted: a workspace of a higher priority needed its GPUs
	// (status.lifecycle.preemption says which).
	StopPreempted StopReason = "Preempted"
)

// AfterPreemption says what a preempted workspace does once it stopped.
// +kubebuilder:validation:Enum=Requeue;Stay
type AfterPreemption string

// After a preemption.
const (
	// PreemptedRequeue: the workspace queues again on its own (the user
	// did not ask it to stop), at the place the manager's requeue policy
	// gives it.
	PreemptedRequeue AfterPreemption = "Requeue"
	// PreemptedStay: the workspace stays stopped, as if its user had
	// stopped it (Apiary sets spec.lifecycle.stopped); starting it is its
	// user's.
	PreemptedStay AfterPreemption = "Stay"
)

// RequeueTimestamp is the place a preempted workspace takes when it
// queues again (Kueue's requeuingStrategy.timestamp).
type RequeueTimestamp string

// Requeue timestamps.
const (
	// RequeueEviction: the time it was preempted, behind every workspace
	// of its priority that queued before that.
	RequeueEviction RequeueTimestamp = "Eviction"
	// RequeueCreation: the place it held before it was preempted (its
	// creation, or its last start), ahead of the younger ones.
	RequeueCreation RequeueTimestamp = "Creation"
)

// WorkspacePreemption records the preemption that stopped a workspace.
type WorkspacePreemption struct {
	// By is the workspace that preempted this one, as namespace/name: one
	// of the same tenant (namespace, or the same TenantQuotas).
	// +kubebuilder:validation:MaxLength=317
	By string `json:"by"`
	// ByPriority is the preemptor's priority then.
	ByPriority int32 `json:"byPriority"`
	// At is when it was preempted.
	At metav1.Time `json:"at"`
	// QueueAs is the place in the queues the workspace takes when it
	// queues again after this preemption (the requeue policy's
	// timestamp).
	// +optional
	QueueAs *metav1.Time `json:"queueAs,omitempty"`
}

// WorkspaceLifecycleStatus is Apiary's record of a workspace's stops,
// starts, expiry and activity. Every clock Apiary keeps for a workspace is
// here or in its spec, so a restarted manager reaches the same verdicts.
type WorkspaceLifecycleStatus struct {
	// StopRequestedAt is when the workspace began to stop; set while it is
	// stopping or stopped.
	// +optional
	StopRequestedAt *metav1.Time `json:"stopRequestedAt,omitempty"`

	// StoppedAt is when the workspace's pods were scaled away and its GPUs
	// and quota given back.
	// +optional
	StoppedAt *metav1.Time `json:"stoppedAt,omitempty"`

	// StopReason says why the workspace stopped.
	// +optional
	StopReason StopReason `json:"stopReason,omitempty"`

	// Preemption is the last preemption of the workspace; cleared by a
	// stop of another reason.
	// +optional
	Preemption *WorkspacePreemption `json:"preemption,omitempty"`

	// QueuedAt is when the workspace asked to start again: its place in the
	// queues for GPUs and quota (its creation time before its first stop).
	// +optional
	QueuedAt *metav1.Time `json:"queuedAt,omitempty"`

	// RunningSince is when the workspace last reached Running.
	// +optional
	RunningSince *metav1.Time `json:"runningSince,omitempty"`

	// ExpiresAt is when the workspace expires, from its spec and its class.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// LastActivity is the newest activity the idle policy's source reported.
	// +optional
	LastActivity *metav1.Time `json:"lastActivity,omitempty"`

	// ActivityCheckedAt is when the source was last asked.
	// +optional
	ActivityCheckedAt *metav1.Time `json:"activityCheckedAt,omitempty"`

	// ActivityFailures counts the source's answers in a row without an
	// activity (an error, no series, a refused probe); reset by an answer.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ActivityFailures int32 `json:"activityFailures,omitempty"`

	// Ports are the pool ports the workspace's TCP and SSH endpoints held
	// before it stopped; it asks for them again when it starts.
	// +listType=map
	// +listMapKey=endpoint
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Ports []PortAssignment `json:"ports,omitempty"`

	// StoppedWorkloads are the release's workload controllers Apiary
	// scaled away when the workspace stopped, with what they had: what a
	// start gives back, never more than the workspace is admitted. Apiary
	// records them here, where a tenant cannot write, before it scales.
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2500
	// +optional
	StoppedWorkloads []StoppedWorkload `json:"stoppedWorkloads,omitempty"`
}

// StoppedWorkload is a workload controller of a stopped workspace's
// release on the child, and what it had before Apiary scaled it away.
type StoppedWorkload struct {
	// Kind is the controller's kind: Deployment, StatefulSet, ReplicaSet,
	// LeaderWorkerSet or CronJob.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`

	// Name is the controller's name in the workspace's namespace on the child.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Replicas it had; a CronJob's is 1 (it was not suspended).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +required
	Replicas int32 `json:"replicas"`
}
