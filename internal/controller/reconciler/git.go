package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/check"
	"github.com/apiaryhq/apiary/internal/delivery/flux"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// GitReadback is what the controllers use of the Git sink beyond
// delivery.Sink: notices when queued changes are committed, and whether Flux
// applied a commit.
type GitReadback interface {
	Subscribe(kind string) <-chan event.GenericEvent
	Synced(ctx context.Context, reader client.Reader, owner delivery.Owner, revision string) (delivery.SyncState, error)
}

// AsGit returns the sink's Git read-back, nil in direct mode. Whether an
// owner is delivered through Git is GitOf's question: a Router has a Git
// read-back while it delivers some namespaces directly.
func AsGit(s delivery.Sink) GitReadback {
	g, _ := s.(GitReadback)
	return g
}

// ModeOf is the mode of the sink that delivers the owners of namespace. A
// Router (--tenant-git) sends the owners of annotated namespaces to Git and
// the others to its default sink, which may be direct.
func ModeOf(ctx context.Context, s delivery.Sink, namespace string) (string, error) {
	if r, ok := s.(interface {
		ModeOf(ctx context.Context, namespace string) (string, error)
	}); ok {
		return r.ModeOf(ctx, namespace)
	}
	return s.Mode(), nil
}

// GitOf returns the Git read-back for the owners of namespace, nil when
// they are delivered directly.
func GitOf(ctx context.Context, s delivery.Sink, namespace string) (GitReadback, error) {
	mode, err := ModeOf(ctx, s, namespace)
	if err != nil || mode != delivery.ModeGit {
		return nil, err
	}
	return AsGit(s), nil
}

// KustomizationObject is the Flux Kustomization kind, for watches.
func KustomizationObject() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(flux.KustomizationGVK)
	return u
}

// commitReason names why the Git sink could not commit an owner's changes.
func commitReason(err error) string {
	switch {
	case check.IsRefused(err):
		return commonv1.ObjectRefusedReason
	case seal.IsNoRecipients(err):
		return commonv1.NoEncryptionRecipientsReason
	case gitrepo.IsCredentials(err):
		return commonv1.InvalidGitCredentialsReason
	case gitrepo.IsSigningKey(err):
		return commonv1.InvalidSigningKeyReason
	case gitrepo.IsAuthFailed(err):
		return commonv1.GitAuthFailedReason
	case gitrepo.IsUnreachable(err):
		return commonv1.GitUnreachableReason
	case gitrepo.IsPushRejected(err):
		return commonv1.GitPushRejectedReason
	case errors.Is(err, gitrepo.ErrInvalidTree):
		return commonv1.InvalidTreeReason
	}
	return commonv1.DeliveryFailedReason
}

// RecordCommit sets Committed from a Git sink's Apply: pending, failed with
// a reason per cause, or the commit that holds the owner's objects. It
// returns the revision to check with Flux, empty when there is none yet.
func RecordCommit(obj conditions.Setter, d *commonv1.DeliveryStatus, res *delivery.Result, err error) string {
	switch {
	case err != nil && check.IsRefused(err):
		// Refused objects wait for a new spec; the owner's other changes
		// are committed.
		conditions.MarkFalse(obj, commonv1.CommittedCondition, commonv1.ObjectRefusedReason, "%s", err)
		return ""
	case err != nil && res != nil && res.Pending:
		conditions.MarkFalse(obj, commonv1.CommittedCondition, commitReason(err),
			"changes wait for the next commit, which failed: %s", err)
		return ""
	case err != nil && seal.IsNoRecipients(err):
		conditions.MarkFalse(obj, commonv1.CommittedCondition, commonv1.NoEncryptionRecipientsReason, "%s", err)
		return ""
	case res != nil && res.Pending:
		conditions.MarkFalse(obj, commonv1.CommittedCondition, commonv1.CommitPendingReason,
			"%d changed objects wait for the next commit", len(res.Changed))
		return ""
	case res != nil && res.Revision != "":
		d.Revision = res.Revision
		conditions.MarkTrue(obj, commonv1.CommittedCondition, commonv1.SucceededReason, "commit %s", res.Revision)
		return res.Revision
	}
	return ""
}

// ObserveSync sets Synced from the Flux Kustomization that applies the
// commit d.Revision. It reads the Kustomization only while that commit is
// not known to be applied, so a synced owner costs nothing.
func ObserveSync(ctx context.Context, g GitReadback, reader client.Reader, owner delivery.Owner, obj conditions.Setter, d *commonv1.DeliveryStatus, revision string) error {
	if revision == "" {
		if !conditions.Has(obj, commonv1.SyncedCondition) {
			conditions.MarkUnknown(obj, commonv1.SyncedCondition, commonv1.CommitPendingReason, "waiting for the commit")
		}
		return nil
	}
	if d.SyncedCommit == revision && conditions.IsTrue(obj, commonv1.SyncedCondition) {
		return nil
	}
	st, err := g.Synced(ctx, reader, owner, revision)
	if err != nil {
		return fmt.Errorf("reading Flux's sync state: %w", err)
	}
	switch {
	case !st.Known:
		conditions.MarkUnknown(obj, commonv1.SyncedCondition, commonv1.FluxNotConfiguredReason, "%s", st.Message)
	case st.Synced:
		d.SyncedCommit, d.SyncedRevision = revision, st.Applied
		conditions.MarkTrue(obj, commonv1.SyncedCondition, commonv1.SucceededReason, "%s", st.Message)
	default:
		conditions.MarkFalse(obj, commonv1.SyncedCondition, commonv1.SyncPendingReason, "%s", st.Message)
	}
	return nil
}

// GitPending reports the first Git delivery condition that holds the owner
// back (Committed or Synced not True), for the Ready summary.
func GitPending(obj conditions.Getter) (reason, message string, pending bool) {
	for _, t := range []string{commonv1.CommittedCondition, commonv1.SyncedCondition} {
		c := conditions.Get(obj, t)
		if c != nil && c.Status != "True" && c.Reason != commonv1.FluxNotConfiguredReason {
			return c.Reason, c.Message, true
		}
	}
	return "", "", false
}
