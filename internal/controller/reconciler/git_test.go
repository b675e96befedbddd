package reconciler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/check"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// TestRecordCommit maps what the Git sink returned to the Committed
// condition a user reads: one reason per cause.
func TestRecordCommit(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("pushing to https://git.example.com/fleet.git: %w", err) }
	refused := &check.RefusedError{Object: "ServiceSet ns/ss", Err: apierrors.NewInvalid(schema.GroupKind{Kind: "ServiceSet"}, "ss", nil)}
	tests := []struct {
		name       string
		res        *delivery.Result
		err        error
		wantStatus string
		wantReason string
		wantRev    string
	}{
		{"committed", &delivery.Result{Revision: "abc123"}, nil, "True", commonv1.SucceededReason, "abc123"},
		{"pending", &delivery.Result{Pending: true, Changed: []string{"a"}}, nil, "False", commonv1.CommitPendingReason, ""},
		{"unreachable", &delivery.Result{Pending: true}, wrap(gitrepo.ErrUnreachable), "False", commonv1.GitUnreachableReason, ""},
		{"auth", &delivery.Result{Pending: true}, wrap(gitrepo.ErrAuthFailed), "False", commonv1.GitAuthFailedReason, ""},
		{"rejected", &delivery.Result{Pending: true}, wrap(gitrepo.ErrPushRejected), "False", commonv1.GitPushRejectedReason, ""},
		{"invalid tree", &delivery.Result{Pending: true}, wrap(gitrepo.ErrInvalidTree), "False", commonv1.InvalidTreeReason, ""},
		{"invalid credentials", &delivery.Result{Pending: true}, wrap(gitrepo.ErrCredentials), "False", commonv1.InvalidGitCredentialsReason, ""},
		{"invalid signing key", &delivery.Result{Pending: true}, wrap(gitrepo.ErrSigningKey), "False", commonv1.InvalidSigningKeyReason, ""},
		{"not open, credentials", &delivery.Result{Pending: true}, fmt.Errorf("%w: %w", delivery.ErrNotOpen, gitrepo.ErrCredentials), "False", commonv1.InvalidGitCredentialsReason, ""},
		{"not open", &delivery.Result{Pending: true}, fmt.Errorf("%w: %w", delivery.ErrNotOpen, gitrepo.ErrUnreachable), "False", commonv1.GitUnreachableReason, ""},
		{"no recipients", &delivery.Result{}, fmt.Errorf("Secret ns/values: %w", seal.ErrNoRecipients), "False", commonv1.NoEncryptionRecipientsReason, ""},
		{"other", &delivery.Result{Pending: true}, errors.New("disk full"), "False", commonv1.DeliveryFailedReason, ""},
		{"refused", &delivery.Result{Revision: "abc123"}, refused, "False", commonv1.ObjectRefusedReason, ""},
		{"refused, others pending", &delivery.Result{Pending: true}, errors.Join(refused), "False", commonv1.ObjectRefusedReason, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &infrav1.Colony{}
			d := &commonv1.DeliveryStatus{}
			rev := RecordCommit(obj, d, tt.res, tt.err)
			c := conditions.Get(obj, commonv1.CommittedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(string(c.Status)).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(rev).To(Equal(tt.wantRev))
			g.Expect(d.Revision).To(Equal(tt.wantRev))
			if check.IsRefused(tt.err) {
				g.Expect(TerminalDeliveryErr(tt.err)).To(BeTrue(), "a refusal waits for a new spec, as an Invalid answer does")
			}
			_, _, pending := GitPending(obj)
			g.Expect(pending).To(Equal(tt.wantStatus != "True"))
		})
	}
}
