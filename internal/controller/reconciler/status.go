package reconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/metrics"
)

// FieldOwner is the field manager of every write Apiary makes.
const FieldOwner = "apiary"

// AllInvalid reports whether err, and every error joined into it, is an
// Invalid answer of the API server: a terminal error that only a change of
// spec can resolve.
func AllInvalid(err error) bool {
	if err == nil {
		return false
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !AllInvalid(e) {
				return false
			}
		}
		return true
	}
	if apierrors.IsInvalid(err) {
		return true
	}
	if next := errors.Unwrap(err); next != nil {
		return AllInvalid(next)
	}
	return false
}

// TerminalDeliveryErr reports whether a sink's error needs a change of spec
// or configuration rather than a retry: objects the API server refused, or
// Secrets the Git sink may not commit.
func TerminalDeliveryErr(err error) bool {
	return AllInvalid(err) || seal.IsNoRecipients(err)
}

// StatusObject is an Apiary object with kstatus conditions.
type StatusObject interface {
	client.Object
	conditions.Setter
}

// PatchStatus writes the object's final state of a reconciliation, once.
// observedGeneration moves only when the object is Ready or Stalled (always,
// with alwaysObserve). A deleted object that is gone is not an error.
func PatchStatus(ctx context.Context, p *Patcher, obj StatusObject, alwaysObserve bool) error {
	boundConditions(obj)
	observe := alwaysObserve || conditions.IsReady(obj) || conditions.IsStalled(obj)
	err := p.Patch(ctx, obj, observe)
	if err != nil && apierrors.IsNotFound(err) && !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return err
}

// EnsureFinalizer adds the finalizer and persists it before any other work,
// so nothing is delivered for an object that could vanish without cleanup.
func EnsureFinalizer(ctx context.Context, p *Patcher, obj client.Object, finalizer string) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	controllerutil.AddFinalizer(obj, finalizer)
	if err := p.Patch(ctx, obj, false); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// IgnoreGone ends the reconcile of an object that is not found: it is gone,
// and so are its metrics series. Other errors are returned.
func IgnoreGone(kind string, req ctrl.Request, err error) error {
	if apierrors.IsNotFound(err) {
		metrics.ForgetObject(kind, req.NamespacedName)
		return nil
	}
	return err
}
