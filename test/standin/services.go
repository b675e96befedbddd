package standin

import (
	"context"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Services is the extension point for kcm's services part: the ServiceSets
// of a ClusterDeployment. An implementation typically runs its own
// controller on ServiceSets (writing their status as the Sveltos adapter
// does) and answers the stand-in's two questions below. When StandIn.Services
// is set, the stand-in also watches ServiceSets and reconciles the
// ClusterDeployment named by their spec.cluster.
type Services interface {
	// ServiceStates returns the states of the services of a provisioned
	// ClusterDeployment: kcm copies the status.services of every ServiceSet of
	// the namespace whose spec.cluster names it. The stand-in writes them to
	// status.services and derives ServicesInReadyState ("<ready>/<total>")
	// and, through it, Ready.
	ServiceStates(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) ([]k0rdentv1beta1.ServiceState, error)

	// Cleanup removes the services of a deleted ClusterDeployment (kcm deletes
	// the ServiceSets owned by it) and reports whether they are all gone; the
	// stand-in keeps its finalizer until then.
	Cleanup(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (done bool, err error)
}
