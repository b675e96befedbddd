package manager

import (
	"context"
	"crypto/hmac"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
)

// saltKey is the key of the salt in the salt Secret.
const saltKey = "salt"

// DefaultSaltSecretName is the Secret, in the manager's namespace, that keeps
// the salt of the SOPS plaintext digests across restarts.
const DefaultSaltSecretName = "apiary-sops-digest-salt"

// sopsSealer encrypts Secrets with SOPS for age recipients and recognises an
// unchanged Secret by the keyed digest Encrypt records.
type sopsSealer struct {
	recipients []string
	salt       []byte
}

var _ seal.Encrypter = (*sopsSealer)(nil)

func (s *sopsSealer) Encrypt(manifest []byte) ([]byte, error) {
	return sopsenc.Encrypt(manifest, s.recipients, s.salt)
}

func (s *sopsSealer) Unchanged(committed, manifest []byte) bool {
	want, err := sopsenc.Digest(manifest, s.recipients, s.salt)
	if err != nil {
		return false
	}
	got := sopsenc.DigestOf(committed)
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}

// newSealer returns the SOPS sealer for the recipients, nil without any. The
// salt comes from (or is stored in) the salt Secret when one is named, or the
// manager's namespace (POD_NAMESPACE) is known; otherwise it lives only as
// long as the process, and a restart re-encrypts every Secret once.
func newSealer(ctx context.Context, c client.Client, reader client.Reader, recipients []string, ref *types.NamespacedName) (seal.Encrypter, error) {
	if len(recipients) == 0 {
		return nil, nil
	}
	if ref == nil {
		if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
			ref = &types.NamespacedName{Namespace: ns, Name: DefaultSaltSecretName}
		}
	}
	var salt []byte
	var err error
	if ref == nil {
		salt, err = sopsenc.NewSalt()
	} else {
		salt, err = loadSalt(ctx, c, reader, *ref)
	}
	if err != nil {
		return nil, err
	}
	// Fail at start on a bad recipient rather than at the first Secret.
	probe := []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: probe\n  namespace: probe\n")
	if _, err := sopsenc.Digest(probe, recipients, salt); err != nil {
		return nil, fmt.Errorf("checking the age recipients: %w", err)
	}
	return &sopsSealer{recipients: recipients, salt: salt}, nil
}

// loadSalt reads the salt Secret, creating it with a new salt when absent.
func loadSalt(ctx context.Context, c client.Client, reader client.Reader, ref types.NamespacedName) ([]byte, error) {
	s := &corev1.Secret{}
	err := reader.Get(ctx, ref, s)
	if err == nil && len(s.Data[saltKey]) >= sopsenc.MinSaltSize {
		return s.Data[saltKey], nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the SOPS digest salt Secret %s: %w", ref, err)
	}
	if err == nil {
		return nil, fmt.Errorf("the SOPS digest salt Secret %s has no %q of at least %d bytes", ref, saltKey, sopsenc.MinSaltSize)
	}
	salt, err := sopsenc.NewSalt()
	if err != nil {
		return nil, err
	}
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "apiary"}},
		Data: map[string][]byte{saltKey: salt},
	}
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) { // another replica won
			return loadSalt(ctx, c, reader, ref)
		}
		return nil, fmt.Errorf("creating the SOPS digest salt Secret %s: %w", ref, err)
	}
	return salt, nil
}
