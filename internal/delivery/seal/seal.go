// Package seal keeps Secrets out of Git in plaintext: the Encrypter a Git
// sink seals Secret manifests with, the error that refuses a Secret when
// there is none, and the rule that keeps an unchanged Secret's committed
// bytes so it is not encrypted (and committed) again.
package seal

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNoRecipients marks a Secret that the Git sink refuses to commit because
// no encryption recipients are configured: Secrets never reach Git in
// plaintext. It is terminal until the configuration or the set changes.
var ErrNoRecipients = errors.New("no encryption recipients are configured for Git delivery, so Secrets cannot be committed")

// IsNoRecipients reports whether err holds ErrNoRecipients.
func IsNoRecipients(err error) bool { return errors.Is(err, ErrNoRecipients) }

// Encrypter turns a plaintext Secret manifest into one that is safe to
// commit, e.g. encrypted with SOPS for age recipients.
type Encrypter interface {
	// Encrypt returns the committed form of a plaintext Secret manifest.
	Encrypt(manifest []byte) ([]byte, error)
	// Unchanged reports whether committed, an earlier result of Encrypt,
	// holds the same plaintext as manifest, so that an unchanged Secret is
	// not re-encrypted (and recommitted) on every reconcile.
	Unchanged(committed, manifest []byte) bool
}

// Seal returns the bytes to commit for the plaintext Secret manifest:
// current, the committed form, when it holds the same plaintext (holds is
// content already found to), otherwise a new encryption. Without an
// Encrypter it refuses with ErrNoRecipients.
func Seal(enc Encrypter, manifest, current, holds []byte) ([]byte, error) {
	if enc == nil {
		return nil, ErrNoRecipients
	}
	if current != nil && (bytes.Equal(holds, current) || enc.Unchanged(current, manifest)) {
		return current, nil
	}
	data, err := enc.Encrypt(manifest)
	if err != nil {
		return nil, fmt.Errorf("encrypting: %w", err)
	}
	return data, nil
}
