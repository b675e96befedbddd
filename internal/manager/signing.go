package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the signing Secret, as Flux's image-automation-controller names
// them: an armored OpenPGP private key and its optional passphrase.
const (
	signingKeyKey        = "git.asc"
	signingPassphraseKey = "passphrase"
)

// signingKey reads the OpenPGP key that signs Apiary's commits; nil without
// a Secret.
func signingKey(ctx context.Context, reader client.Reader, ref *types.NamespacedName) (*openpgp.Entity, error) {
	if ref == nil {
		return nil, nil
	}
	s := &corev1.Secret{}
	if err := reader.Get(ctx, *ref, s); err != nil {
		return nil, fmt.Errorf("reading the signing key Secret %s: %w", ref, err)
	}
	e, err := parseSigningKey(s.Data[signingKeyKey], s.Data[signingPassphraseKey])
	if err != nil {
		return nil, fmt.Errorf("signing key Secret %s: %w", ref, err)
	}
	return e, nil
}

// parseSigningKey decodes the first key of an armored key ring and
// decrypts it (and its subkeys) with the passphrase when it is encrypted.
func parseSigningKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	if len(armored) == 0 {
		return nil, fmt.Errorf("no %q", signingKeyKey)
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", signingKeyKey, err)
	}
	if len(ring) == 0 || ring[0].PrivateKey == nil {
		return nil, fmt.Errorf("%q holds no private key", signingKeyKey)
	}
	e := ring[0]
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("the key is encrypted and there is no %q", signingPassphraseKey)
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, errors.New("the passphrase does not decrypt the key")
		}
	}
	return e, nil
}
