package colony

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
)

var clusterDeploymentGVK = k0rdentv1beta1.GroupVersion.WithKind("ClusterDeployment")

// deliver hands the rendered objects to the sink and records the inventory.
// While an entry fails to render nothing is pruned, so its existing cluster
// is never lost to a typo.
func (r *Reconciler) deliver(ctx context.Context, obj *infrav1.Colony, rc *renderedColony) error {
	if obj.Status.Delivery == nil {
		obj.Status.Delivery = &commonv1.DeliveryStatus{}
	}
	d := obj.Status.Delivery
	g, err := reconciler.GitOf(ctx, r.Sink, obj.Namespace)
	if err != nil {
		return err
	}
	d.Mode = delivery.ModeDirect
	if g != nil {
		d.Mode = delivery.ModeGit
	}
	prev := d.Inventory
	pruneFrom := prev
	if len(rc.failed) > 0 {
		pruneFrom = nil
	}
	res, err := r.Sink.Apply(ctx, colonyOwner(obj), rc.objects(), pruneFrom)
	if res != nil {
		reconciler.RecordApply(d, res)
		if len(rc.failed) > 0 {
			d.Inventory = canon.UnionInventory(res.Inventory, prev)
		}
	}
	var rev string
	if g != nil {
		rev = reconciler.RecordCommit(obj, d, res, err)
	}
	if err != nil {
		rc.applyErr = err
		conditions.MarkFalse(obj, commonv1.DeliveredCondition, commonv1.DeliveryFailedReason, "%s", err)
		if reconciler.TerminalDeliveryErr(err) {
			// The spec asks for what cannot be delivered: wait for a new spec.
			return nil
		}
		return fmt.Errorf("delivering the Colony's objects: %w", err)
	}
	conditions.MarkTrue(obj, commonv1.DeliveredCondition, commonv1.SucceededReason, "delivered %d objects (%s)", len(rc.objects()), d.Mode)
	if g != nil {
		return reconciler.ObserveSync(ctx, g, r.SyncReader, colonyOwner(obj), obj, d, rev)
	}
	return nil
}

// clusterDeployments reads the entries' ClusterDeployments from the cache.
func (r *Reconciler) clusterDeployments(ctx context.Context, obj *infrav1.Colony, rc *renderedColony) map[string]*k0rdentv1beta1.ClusterDeployment {
	out := map[string]*k0rdentv1beta1.ClusterDeployment{}
	for _, c := range rc.clusters {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: c.cdName}, cd); err == nil {
			out[c.cdName] = cd
		}
	}
	return out
}

// observeClusters records the state of each entry's ClusterDeployment.
func (r *Reconciler) observeClusters(obj *infrav1.Colony, rc *renderedColony, cds map[string]*k0rdentv1beta1.ClusterDeployment) {
	statuses := make([]infrav1.ColonyClusterStatus, 0, len(rc.clusters))
	var refs []*corev1.ObjectReference
	var ready int32
	for i := range rc.clusters {
		c := &rc.clusters[i]
		st := infrav1.ColonyClusterStatus{ClusterName: c.entry.ClusterName, ClusterDeploymentName: c.cdName}
		cd, exists := cds[c.cdName]
		switch {
		case c.err != nil:
			st.Reason, st.Message = commonv1.RenderFailedReason, reconciler.Truncate(c.err.Error(), maxClusterMessage)
		case rc.applyErr != nil && strings.Contains(rc.applyErr.Error(), c.cdName):
			st.Reason, st.Message = commonv1.DeliveryFailedReason, reconciler.Truncate(applyErrorFor(rc.applyErr, c.cdName), maxClusterMessage)
		case !exists:
			st.Reason, st.Message = infrav1.ClusterPendingReason, "ClusterDeployment does not exist yet"
		default:
			s := k0rdentstatus.OwnState(cd)
			st.Ready = s.Phase == k0rdentstatus.PhaseReady
			st.Reason, st.Message = commonv1.PhaseReason(s.Phase), reconciler.Truncate(s.Message, maxClusterMessage)
			if s.Phase == k0rdentstatus.PhaseFailed {
				st.Reason = infrav1.ClusterFailedReason
			}
		}
		c.state = st
		if exists {
			refs = append(refs, &corev1.ObjectReference{APIVersion: clusterDeploymentGVK.GroupVersion().String(),
				Kind: clusterDeploymentGVK.Kind, Namespace: cd.Namespace, Name: cd.Name})
		}
		if st.Ready {
			ready++
		}
		statuses = append(statuses, st)
	}
	obj.Status.Clusters = statuses
	obj.Status.ClusterDeploymentRefs = refs
	obj.Status.TotalClusters = int32(len(rc.clusters))
	obj.Status.ReadyClusters = ready
}

func applyErrorFor(err error, name string) string {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if strings.Contains(e.Error(), name) {
				return e.Error()
			}
		}
	}
	return err.Error()
}

// maxClusterMessage bounds the message of one cluster of a Colony's status,
// which may hold a thousand of them.
const maxClusterMessage = 256

// summarizeClusters sets the phase and the ClustersReady condition.
func summarizeClusters(obj *infrav1.Colony, rc *renderedColony) {
	var failed, notReady []string
	anyExists := false
	for _, c := range rc.clusters {
		switch {
		case c.state.Ready:
			anyExists = true
		case c.state.Reason == commonv1.RenderFailedReason || c.state.Reason == commonv1.DeliveryFailedReason ||
			c.state.Reason == infrav1.ClusterFailedReason:
			failed = append(failed, fmt.Sprintf("%s (%s)", c.entry.ClusterName, c.state.Message))
		default:
			if c.state.Reason != infrav1.ClusterPendingReason {
				anyExists = true
			}
			notReady = append(notReady, c.entry.ClusterName)
		}
	}
	sort.Strings(failed)
	sort.Strings(notReady)
	total, ready := obj.Status.TotalClusters, obj.Status.ReadyClusters
	switch {
	case len(failed) > 0:
		obj.Status.Phase = infrav1.ColonyPhaseDegraded
		if ready == 0 && len(notReady) == 0 {
			obj.Status.Phase = infrav1.ColonyPhaseFailed
		}
		msg := fmt.Sprintf("%d/%d clusters ready. Failed: [%s]", ready, total, reconciler.Enumerate(failed, "; ", 5))
		if len(notReady) > 0 {
			msg += fmt.Sprintf(". Not ready: [%s]", reconciler.Enumerate(notReady, ", ", 20))
		}
		conditions.MarkFalse(obj, infrav1.ClustersReadyCondition, infrav1.ClusterFailedReason, "%s", msg)
		conditions.MarkStalled(obj, infrav1.ClusterFailedReason, "%s", msg)
	case len(notReady) > 0:
		obj.Status.Phase = infrav1.ColonyPhaseProvisioning
		if !anyExists {
			obj.Status.Phase = infrav1.ColonyPhasePending
		}
		conditions.MarkFalse(obj, infrav1.ClustersReadyCondition, infrav1.NotAllClustersReadyReason,
			"%d out of %d clusters are ready. Not ready clusters: [%s]", ready, total, reconciler.Enumerate(notReady, ", ", 20))
		conditions.Delete(obj, commonv1.StalledCondition)
	default:
		obj.Status.Phase = infrav1.ColonyPhaseReady
		conditions.MarkTrue(obj, infrav1.ClustersReadyCondition, infrav1.AllClustersReadyReason,
			"All %d clusters of the colony are ready", total)
		conditions.Delete(obj, commonv1.StalledCondition)
	}
}

// summarizeColony derives the kstatus conditions (Ready, Reconciling,
// Stalled) from the outcome of the reconciliation.
func summarizeColony(obj *infrav1.Colony, err error) {
	switch {
	case !obj.DeletionTimestamp.IsZero():
		conditions.MarkFalse(obj, commonv1.ReadyCondition, commonv1.DeletingReason, "deleting the Colony's clusters")
		conditions.Delete(obj, commonv1.StalledCondition)
	case err != nil:
		conditions.MarkFalse(obj, commonv1.ReadyCondition, firstFalseReason(obj), "%s", err)
		conditions.MarkReconciling(obj, commonv1.ProgressingWithRetryReason, "%s", err)
		conditions.Delete(obj, commonv1.StalledCondition)
	case obj.Spec.Suspend:
		// A suspended Colony keeps the status it had.
	case conditions.IsStalled(obj):
		conditions.MarkFalse(obj, commonv1.ReadyCondition, conditions.GetReason(obj, commonv1.StalledCondition), "%s",
			conditions.GetMessage(obj, commonv1.StalledCondition))
		conditions.Delete(obj, commonv1.ReconcilingCondition)
	case conditions.IsTrue(obj, infrav1.ClustersReadyCondition):
		msg := conditions.GetMessage(obj, infrav1.ClustersReadyCondition)
		if conditions.IsFalse(obj, infrav1.KubeconfigsReadyCondition) {
			conditions.MarkFalse(obj, commonv1.ReadyCondition, infrav1.KubeconfigMissingReason, "%s",
				conditions.GetMessage(obj, infrav1.KubeconfigsReadyCondition))
			conditions.MarkReconciling(obj, commonv1.ProgressingReason, "waiting for kubeconfig Secrets")
			return
		}
		if reason, gitMsg, pending := reconciler.GitPending(obj); pending {
			// The clusters are ready, but the latest change is not applied yet.
			conditions.MarkFalse(obj, commonv1.ReadyCondition, reason, "%s", gitMsg)
			conditions.MarkReconciling(obj, reason, "%s", gitMsg)
			return
		}
		conditions.MarkTrue(obj, commonv1.ReadyCondition, commonv1.SucceededReason, "%s", msg)
		conditions.Delete(obj, commonv1.ReconcilingCondition)
	default:
		msg := conditions.GetMessage(obj, infrav1.ClustersReadyCondition)
		conditions.MarkFalse(obj, commonv1.ReadyCondition, commonv1.ProgressingReason, "%s", msg)
		conditions.MarkReconciling(obj, commonv1.ProgressingReason, "%s", msg)
	}
}

// firstFalseReason is the reason of the first failing domain condition.
func firstFalseReason(obj *infrav1.Colony) string {
	for _, t := range []string{commonv1.RenderedCondition, commonv1.DeliveredCondition, commonv1.CommittedCondition, infrav1.KubeconfigsReadyCondition} {
		if conditions.IsFalse(obj, t) {
			return conditions.GetReason(obj, t)
		}
	}
	return commonv1.FailedReason
}
