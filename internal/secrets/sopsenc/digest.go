package sopsenc

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/yaml"
)

// DigestAnnotation is the metadata annotation Encrypt writes: a keyed digest
// of the plaintext Secret and the recipients (see Digest). It lies outside
// EncryptedRegex, so it can be read without a key, and the SOPS MAC covers it.
const DigestAnnotation = "apiary.exalsius.ai/sops-digest"

// MinSaltSize is the smallest salt Encrypt and Digest accept.
const MinSaltSize = 16

// SaltSize is the size of the salt NewSalt returns.
const SaltSize = 32

const (
	digestPrefix = "hmac-sha256:"
	digestDomain = "apiary.exalsius.ai/sops-digest/v1"
)

// NewSalt returns SaltSize random bytes, to be generated once per
// installation and kept secret (e.g. in a Secret), for Encrypt and Digest.
func NewSalt() ([]byte, error) {
	b := make([]byte, SaltSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating salt: %w", err)
	}
	return b, nil
}

// Digest returns the value Encrypt writes in DigestAnnotation for manifest
// and recipients: "hmac-sha256:" and the hex HMAC-SHA256, keyed by salt, of
// the canonical plaintext (keys sorted, comments and any existing
// DigestAnnotation dropped) and the sorted set of recipients. It changes when
// a value, the metadata, a recipient or the salt changes, and not with YAML
// formatting or key order. Without the salt it reveals nothing about the
// values; with it, low-entropy values could be guessed offline, so keep the
// salt as secret as the Secrets themselves.
func Digest(manifest []byte, recipients []string, salt []byte) (string, error) {
	_, normalized, err := parseRecipients(recipients)
	if err != nil {
		return "", err
	}
	s, err := parseSecret(manifest)
	if err != nil {
		return "", err
	}
	d, err := digest(s, normalized, salt)
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.ref, err)
	}
	return d, nil
}

func digest(s *secret, recipients []string, salt []byte) (string, error) {
	if len(salt) < MinSaltSize {
		return "", fmt.Errorf("digest salt has %d bytes, want at least %d", len(salt), MinSaltSize)
	}
	plain, err := s.canonicalJSON()
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, salt)
	writeField(mac, []byte(digestDomain))
	writeField(mac, plain)
	rs := sortedStrings(recipients)
	writeField(mac, binary.BigEndian.AppendUint64(nil, uint64(len(rs))))
	for _, r := range rs {
		writeField(mac, []byte(r))
	}
	return digestPrefix + hex.EncodeToString(mac.Sum(nil)), nil
}

// writeField writes b length-prefixed, so field boundaries are unambiguous.
func writeField(w interface{ Write([]byte) (int, error) }, b []byte) {
	_, _ = w.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
	_, _ = w.Write(b)
}

// DigestOf returns the DigestAnnotation of a SOPS-encrypted Secret document,
// or "" when the document is not SOPS-encrypted or carries none. It needs no
// key: callers compare it with Digest to skip re-encrypting an unchanged
// Secret.
func DigestOf(encrypted []byte) string {
	var doc struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Sops map[string]any `json:"sops"`
	}
	if err := yaml.Unmarshal(encrypted, &doc); err != nil || doc.Sops["mac"] == nil {
		return ""
	}
	return doc.Metadata.Annotations[DigestAnnotation]
}

// EncryptIfChanged returns prev, and changed false, when prev is an encrypted
// document whose DigestAnnotation equals Digest(manifest, recipients, salt);
// otherwise it returns Encrypt(manifest, recipients, salt) and changed true.
// It keeps Git free of a new ciphertext for every reconcile of an unchanged
// Secret.
func EncryptIfChanged(prev, manifest []byte, recipients []string, salt []byte) (out []byte, changed bool, err error) {
	if len(prev) > 0 {
		d, err := Digest(manifest, recipients, salt)
		if err != nil {
			return nil, false, err
		}
		if prevDigest := DigestOf(prev); prevDigest != "" && hmac.Equal([]byte(prevDigest), []byte(d)) {
			return bytes.Clone(prev), false, nil
		}
	}
	out, err = Encrypt(manifest, recipients, salt)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}
