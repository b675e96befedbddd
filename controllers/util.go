package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/metrics"
)

// fieldOwner is the field manager of every write Apiary makes.
const fieldOwner = "apiary"

// jitter spreads periodic requeues over ±10% of d, so that many objects
// created together do not resync together.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := int64(d) / 5
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread+1))
}

// allInvalid reports whether err, and every error joined into it, is an
// Invalid answer of the API server: a terminal error that only a change of
// spec can resolve.
func allInvalid(err error) bool {
	if err == nil {
		return false
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !allInvalid(e) {
				return false
			}
		}
		return true
	}
	if apierrors.IsInvalid(err) {
		return true
	}
	if next := errors.Unwrap(err); next != nil {
		return allInvalid(next)
	}
	return false
}

// terminalDeliveryErr reports whether a sink's error needs a change of spec
// or configuration rather than a retry: objects the API server refused, or
// Secrets the Git sink may not commit.
func terminalDeliveryErr(err error) bool {
	return allInvalid(err) || delivery.IsNoRecipients(err)
}

// unionInventory returns the entries of a and b, sorted by ID.
func unionInventory(a, b *commonv1.ResourceInventory) *commonv1.ResourceInventory {
	seen := map[string]commonv1.ResourceRef{}
	for _, inv := range []*commonv1.ResourceInventory{a, b} {
		if inv == nil {
			continue
		}
		for _, e := range inv.Entries {
			if _, ok := seen[e.ID]; !ok {
				seen[e.ID] = e
			}
		}
	}
	out := &commonv1.ResourceInventory{Entries: make([]commonv1.ResourceRef, 0, len(seen))}
	for _, e := range seen {
		out.Entries = append(out.Entries, e)
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].ID < out.Entries[j].ID })
	return out
}

// statusObject is an Apiary object with kstatus conditions.
type statusObject interface {
	client.Object
	conditions.Setter
}

// patchStatus writes the object's final state of a reconciliation, once.
// observedGeneration moves only when the object is Ready or Stalled (always,
// with alwaysObserve). A deleted object that is gone is not an error.
func patchStatus(ctx context.Context, p *objectPatcher, obj statusObject, alwaysObserve bool) error {
	observe := alwaysObserve || conditions.IsReady(obj) || conditions.IsStalled(obj)
	err := p.patch(ctx, obj, observe)
	if err != nil && apierrors.IsNotFound(err) && !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return err
}

// ensureFinalizer adds the finalizer and persists it before any other work,
// so nothing is delivered for an object that could vanish without cleanup.
func ensureFinalizer(ctx context.Context, p *objectPatcher, obj client.Object, finalizer string) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	controllerutil.AddFinalizer(obj, finalizer)
	if err := p.patch(ctx, obj, false); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// ignoreGone ends the reconcile of an object that is not found: it is gone,
// and so are its metrics series. Other errors are returned.
func ignoreGone(kind string, req ctrl.Request, err error) error {
	if apierrors.IsNotFound(err) {
		metrics.ForgetObject(kind, req.NamespacedName)
		return nil
	}
	return err
}
