// Package sopsenc encrypts Kubernetes Secret manifests with SOPS for age
// recipients so Flux's kustomize-controller can decrypt them
// (spec.decryption.provider: sops with an age key Secret). Only the values
// under data and stringData are encrypted; apiVersion, kind and metadata stay
// readable. Encrypt also records a keyed digest of the plaintext in an
// annotation, so callers can keep an existing ciphertext while the plaintext
// is unchanged instead of committing a new one on every reconcile.
package sopsenc

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/version"
)

// EncryptedRegex selects the keys whose values SOPS encrypts, as
// `sops --encrypted-regex` does: everything under data and stringData.
const EncryptedRegex = "^(data|stringData)$"

// ErrIntegrity is returned by Decrypt when a value or the MAC does not
// authenticate: the document was altered or not produced with its data key.
var ErrIntegrity = errors.New("SOPS integrity check failed")

// dataKeySize is the size of SOPS' AES-256 data key.
const dataKeySize = 32

// Encrypt encrypts the values under data and stringData of one v1 Secret
// manifest for the given age recipients, producing the document
// `sops --encrypt --age <recipients> --encrypted-regex '^(data|stringData)$'`
// produces for the manifest with its keys sorted. The metadata gains the
// DigestAnnotation, an HMAC of the plaintext keyed by salt (see Digest).
// Comments are dropped. Errors name the Secret and keys, never values.
func Encrypt(manifest []byte, recipients []string, salt []byte) (_ []byte, err error) {
	defer recoverInto(&err, "encrypting Secret manifest")
	keys, normalized, err := parseRecipients(recipients)
	if err != nil {
		return nil, err
	}
	s, err := parseSecret(manifest)
	if err != nil {
		return nil, err
	}
	d, err := digest(s, normalized, salt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ref, err)
	}
	s.setAnnotation(DigestAnnotation, d)
	plain, err := s.yaml()
	if err != nil {
		return nil, err
	}
	store := newStore()
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("%s: loading canonical manifest into SOPS: %w", s.ref, err)
	}

	dataKey := make([]byte, dataKeySize)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, fmt.Errorf("%s: generating data key: %w", s.ref, err)
	}
	group := make(sops.KeyGroup, 0, len(keys))
	for i, k := range keys {
		if err := k.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("%s: encrypting data key for age recipient %q: %w", s.ref, normalized[i], err)
		}
		group = append(group, k)
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:      []sops.KeyGroup{group},
			EncryptedRegex: EncryptedRegex,
			Version:        version.Version,
		},
	}
	cipher := aes.NewCipher()
	// Errors of the tree walk may quote values: never wrap them.
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("%s: encrypting values failed", s.ref)
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("%s: encrypting MAC: %w", s.ref, err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		return nil, fmt.Errorf("%s: emitting encrypted document: %w", s.ref, err)
	}
	return out, nil
}

// Decrypt decrypts a document produced by Encrypt (or by the sops CLI for
// age) with ageIdentity, one or more AGE-SECRET-KEY lines as in an age key
// file, verifies the SOPS MAC and returns the plaintext manifest, sops
// metadata removed. It uses the identity directly: unlike sops' decrypt
// package it never reads SOPS_AGE_KEY or key files. A document that does not
// authenticate yields an error wrapping ErrIntegrity.
func Decrypt(encrypted []byte, ageIdentity string) (_ []byte, err error) {
	defer recoverInto(&err, "decrypting SOPS document")
	ids, err := age.ParseIdentities(strings.NewReader(ageIdentity))
	if err != nil {
		return nil, fmt.Errorf("parsing age identity: %w", err)
	}
	store := newStore()
	tree, err := store.LoadEncryptedFile(encrypted)
	if err != nil {
		return nil, fmt.Errorf("loading SOPS document: %w", err)
	}
	ref := refOfTree(tree.Branches)
	key, err := dataKey(tree.Metadata, ids)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	cipher := aes.NewCipher()
	// Errors of the tree walk may quote (tampered, plaintext) values: never wrap them.
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fmt.Errorf("%s: decrypting values: %w", ref, ErrIntegrity)
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, fmt.Errorf("%s: decrypting MAC: %w", ref, ErrIntegrity)
	}
	if s, ok := stored.(string); !ok || s != mac {
		return nil, fmt.Errorf("%s: MAC mismatch: %w", ref, ErrIntegrity)
	}
	plain, err := store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fmt.Errorf("%s: emitting plaintext: %w", ref, err)
	}
	return canonicalYAML(plain)
}

// recoverInto turns a panic inside SOPS (seen on malicious input, which is
// why kustomize-controller recovers too) into an error; the panic value is
// not included, as it may quote document content.
func recoverInto(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: SOPS failed on malformed input", what)
	}
}

// dataKey recovers the SOPS data key from the document's age master keys
// with the given identities, never consulting the environment.
func dataKey(md sops.Metadata, ids []age.Identity) ([]byte, error) {
	if len(md.KeyGroups) != 1 {
		return nil, fmt.Errorf("document has %d key groups; only a single key group (no Shamir sharing) is supported", len(md.KeyGroups))
	}
	ageKeys := 0
	for _, k := range md.KeyGroups[0] {
		ak, ok := k.(*sopsage.MasterKey)
		if !ok {
			continue
		}
		ageKeys++
		// A copy, so the shared tree's key does not keep the identities.
		c := &sopsage.MasterKey{Recipient: ak.Recipient, EncryptedKey: ak.EncryptedKey}
		sopsage.ParsedIdentities(ids).ApplyToMasterKey(c)
		key, err := c.Decrypt()
		if err != nil {
			continue
		}
		if len(key) != dataKeySize {
			return nil, fmt.Errorf("data key for age recipient %q has %d bytes, want %d", ak.Recipient, len(key), dataKeySize)
		}
		return key, nil
	}
	if ageKeys == 0 {
		return nil, errors.New("document has no age recipients")
	}
	return nil, fmt.Errorf("none of the document's %d age recipients matches the identity", ageKeys)
}

// GenerateAgeKey returns a new X25519 age identity (AGE-SECRET-KEY-1...) and
// its recipient (age1...), for tests and sandboxes.
func GenerateAgeKey() (identity, recipient string, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", fmt.Errorf("generating age identity: %w", err)
	}
	return id.String(), id.Recipient().String(), nil
}

// parseRecipients validates age recipients (X25519 age1... or hybrid
// post-quantum age1pq1..., the kinds kustomize-controller's age key Secret
// can hold) and returns SOPS master keys in the given order, duplicates
// removed. Plugin and SSH recipients are refused: they would run external
// programs or need keys Flux cannot import.
func parseRecipients(recipients []string) ([]*sopsage.MasterKey, []string, error) {
	if len(recipients) == 0 {
		return nil, nil, errors.New("at least one age recipient is required")
	}
	seen := map[string]bool{}
	var keys []*sopsage.MasterKey
	var normalized []string
	for i, raw := range recipients {
		r := strings.TrimSpace(raw)
		if looksLikeIdentity(r) {
			// Never echo what looks like a private key.
			return nil, nil, fmt.Errorf("age recipient #%d is an age identity (private key), not a recipient", i+1)
		}
		if err := checkRecipient(r); err != nil {
			return nil, nil, fmt.Errorf("invalid age recipient #%d %q: %w", i+1, truncate(r, 100), err)
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid age recipient #%d %q: %w", i+1, truncate(r, 100), err)
		}
		keys = append(keys, k)
		normalized = append(normalized, r)
	}
	return keys, normalized, nil
}

func checkRecipient(r string) error {
	var err error
	switch {
	case strings.HasPrefix(r, "age1pq1"):
		_, err = age.ParseHybridRecipient(r)
	case strings.HasPrefix(r, "age1"):
		_, err = age.ParseX25519Recipient(r)
	default:
		return errors.New("not an age recipient (want age1... or age1pq1...)")
	}
	return err
}

func looksLikeIdentity(s string) bool {
	return strings.HasPrefix(strings.ToUpper(s), "AGE-SECRET-KEY-") || strings.HasPrefix(strings.ToUpper(s), "AGE-PLUGIN-")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// newStore returns the YAML store, which reads and writes as SOPS' YAML
// store with the sops CLI's defaults does (see yamlStore).
func newStore() yamlStore { return yamlStore{} }

// refOfTree names the Secret from its unencrypted metadata, for errors.
func refOfTree(branches sops.TreeBranches) string {
	var ns, name string
	if len(branches) > 0 {
		for _, item := range branches[0] {
			if k, _ := item.Key.(string); k != "metadata" {
				continue
			}
			md, _ := item.Value.(sops.TreeBranch)
			for _, f := range md {
				switch f.Key {
				case "name":
					name, _ = f.Value.(string)
				case "namespace":
					ns, _ = f.Value.(string)
				}
			}
		}
	}
	return secretRef(ns, name)
}
