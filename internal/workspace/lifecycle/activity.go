package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// ActivityTarget is what an activity source needs to ask a workspace when
// it was last active.
type ActivityTarget struct {
	Workspace types.NamespacedName
	// Cluster is the workspace's ClusterDeployment.
	Cluster types.NamespacedName
	// Namespace is the workspace's namespace on the child cluster.
	Namespace string
	// Release is the workspace's Helm release.
	Release string
	// Policy is the class's idle policy.
	Policy *workspacesv1.IdlePolicy
	// Endpoint is the class's access endpoint the policy names; nil for Prometheus.
	Endpoint *workspacesv1.AccessEndpoint
}

// ActivityReader reads a workspace's last activity. It never fails: what
// it cannot read is an unknown activity, which never culls.
type ActivityReader interface {
	LastActivity(ctx context.Context, t ActivityTarget) Activity
}
