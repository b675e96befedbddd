// Package check tells whether the API server would accept an object before
// a Git sink commits it: a size bound per kind, and a server-side apply dry
// run. Flux applies a folder as one Kustomization, so one object the server
// refuses would fail the apply for every owner of the folder.
package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// Validator tells whether a cluster would accept an object.
type Validator interface {
	// Validate returns nil when the cluster accepts obj or cannot tell,
	// a RefusedError when it refuses obj, and another error when it could
	// not answer now (the object waits for a retry). It does not modify obj.
	Validate(ctx context.Context, obj *unstructured.Unstructured) error
}

// RefusedError is an object the API server would refuse. It unwraps to the
// server's Invalid answer, which names the refused field, so callers that
// treat Invalid answers as terminal treat it the same.
type RefusedError struct {
	// Object names the object, "Kind namespace/name".
	Object string
	// Err is the API server's answer: a StatusError whose reason is Invalid.
	Err error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: not committed, the API server would refuse it: %s", e.Object, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// IsRefused reports whether err holds a RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// DryRun is the Validator of a cluster: a server-side apply of the object
// with dryRun=All, by a field manager that takes over conflicting fields
// (Flux applies them under its own), so that the server validates the
// object against the kind's real schema and the live object and stores
// nothing. One API request per call.
type DryRun struct {
	// Client writes to the cluster.
	Client client.Client
	// FieldManager of the dry runs; "apiary" when empty.
	FieldManager string
}

var _ Validator = (*DryRun)(nil)

// typedPatchFailure starts the answer of a server-side apply whose object
// does not fit the kind's schema (a field of the wrong type, or one the
// schema does not declare): the server answers 500 rather than Invalid,
// and Flux's apply fails with the same answer.
const typedPatchFailure = "failed to create typed patch object"

// Validate dry-runs obj. The server's Invalid answers and the schema
// failures of server-side apply are refusals. Answers that say nothing of
// obj are not: an unserved kind, a forbidden dry run (RBAC, or an
// admission webhook that judges other objects, which the same commit may
// bring), a missing namespace (the same commit may bring it), a webhook
// without dry-run support. Anything else (timeouts, throttling, server
// errors) is returned for a retry.
func (d *DryRun) Validate(ctx context.Context, obj *unstructured.Unstructured) error {
	manager := d.FieldManager
	if manager == "" {
		manager = "apiary"
	}
	err := d.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.DryRunAll, client.ForceOwnership, client.FieldOwner(manager))
	name := canon.Describe(obj.GetKind(), obj.GetNamespace(), obj.GetName())
	switch {
	case err == nil:
		return nil
	case apierrors.IsInvalid(err), apierrors.IsRequestEntityTooLargeError(err):
		return &RefusedError{Object: name, Err: err}
	case strings.Contains(err.Error(), typedPatchFailure):
		return &RefusedError{Object: name, Err: invalid(obj.GroupVersionKind().GroupKind(), obj.GetName(), "", schemaFailure(err.Error()))}
	case meta.IsNoMatchError(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsBadRequest(err):
		return nil
	}
	return fmt.Errorf("%s: checking it with a dry run: %w", name, err)
}

// schemaFailure is the part of a typed-patch failure that names the
// field: ".spec.x: expected string, got ...".
func schemaFailure(msg string) string {
	_, after, ok := strings.Cut(msg, typedPatchFailure)
	if !ok {
		return msg
	}
	if _, detail, ok := strings.Cut(after, "): "); ok {
		return "does not fit the kind's schema: " + detail
	}
	return "does not fit the kind's schema" + after
}
