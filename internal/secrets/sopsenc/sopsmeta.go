package sopsenc

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/getsops/sops/v3"
	sopsage "github.com/getsops/sops/v3/age"
)

// metadataKey is the top-level key of a document's sops metadata.
const metadataKey = "sops"

// The sops metadata of age documents, read and written as SOPS' stores
// package does for age keys. That package also converts the key types of
// every KMS, which links their SDK clients into the manager (7.5 MB); Apiary
// encrypts for age only, and documents with other keys keep their age keys.
// sopsmeta_test.go checks both agree.

// ageMetadata is the part of the sops metadata that age documents use.
type ageMetadata struct {
	ShamirThreshold int        `json:"shamir_threshold,omitempty"`
	KeyGroups       []ageGroup `json:"key_groups,omitempty"`
	Age             []ageKey   `json:"age,omitempty"`
	LastModified    string     `json:"lastmodified"`
	MAC             string     `json:"mac"`
	// The rules of which values are encrypted; at most one is set.
	UnencryptedSuffix       string `json:"unencrypted_suffix,omitempty"`
	EncryptedSuffix         string `json:"encrypted_suffix,omitempty"`
	UnencryptedRegex        string `json:"unencrypted_regex,omitempty"`
	EncryptedRegex          string `json:"encrypted_regex,omitempty"`
	UnencryptedCommentRegex string `json:"unencrypted_comment_regex,omitempty"`
	EncryptedCommentRegex   string `json:"encrypted_comment_regex,omitempty"`
	MACOnlyEncrypted        bool   `json:"mac_only_encrypted,omitempty"`
	Version                 string `json:"version"`
}

type ageGroup struct {
	Age []ageKey `json:"age"`
}

type ageKey struct {
	Enc       string `json:"enc"`
	Recipient string `json:"recipient"`
}

// serializeMetadata appends the tree's metadata under the sops key of the
// first document, its keys sorted as SOPS writes them.
func serializeMetadata(tree sops.Tree) (sops.TreeBranches, error) {
	if len(tree.Metadata.KeyGroups) != 1 {
		return nil, fmt.Errorf("writing %d key groups: only one is supported", len(tree.Metadata.KeyGroups))
	}
	md := tree.Metadata
	m := ageMetadata{
		ShamirThreshold: md.ShamirThreshold, LastModified: md.LastModified.Format(time.RFC3339),
		MAC: md.MessageAuthenticationCode, Version: md.Version,
		UnencryptedSuffix: md.UnencryptedSuffix, EncryptedSuffix: md.EncryptedSuffix,
		UnencryptedRegex: md.UnencryptedRegex, EncryptedRegex: md.EncryptedRegex,
		UnencryptedCommentRegex: md.UnencryptedCommentRegex, EncryptedCommentRegex: md.EncryptedCommentRegex,
		MACOnlyEncrypted: md.MACOnlyEncrypted,
	}
	for _, k := range md.KeyGroups[0] {
		ak, ok := k.(*sopsage.MasterKey)
		if !ok {
			return nil, fmt.Errorf("writing a %s key: only age keys are supported", k.TypeToIdentifier())
		}
		m.Age = append(m.Age, ageKey{Enc: ak.EncryptedKey, Recipient: ak.Recipient})
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshaling metadata: %w", err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, fmt.Errorf("marshaling metadata: %w", err)
	}
	if len(tree.Branches) == 0 {
		return nil, errors.New("no document to add sops metadata to")
	}
	out := append(sops.TreeBranches{}, tree.Branches...)
	out[0] = append(append(sops.TreeBranch{}, out[0]...), sops.TreeItem{Key: metadataKey, Value: goToTree(generic)})
	return out, nil
}

// goToTree turns decoded JSON into SOPS values, maps as sorted branches.
func goToTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b := make(sops.TreeBranch, 0, len(keys))
		for _, k := range keys {
			b = append(b, sops.TreeItem{Key: k, Value: goToTree(v[k])})
		}
		return b
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = goToTree(x)
		}
		return out
	case float64:
		if v == float64(int(v)) {
			return int(v) // as SOPS writes the Shamir threshold
		}
	}
	return v
}

// extractMetadata removes the sops key from the documents and returns their
// metadata, with the age keys of each key group.
func extractMetadata(branches sops.TreeBranches) (sops.TreeBranches, sops.Metadata, error) {
	var tree sops.TreeBranch
	found := false
	for bi, branch := range branches {
		kept := sops.TreeBranch{}
		for _, item := range branch {
			if item.Key != metadataKey {
				kept = append(kept, item)
				continue
			}
			if bi == 0 {
				if found {
					return nil, sops.Metadata{}, fmt.Errorf("found duplicate %s entry", metadataKey)
				}
				t, ok := item.Value.(sops.TreeBranch)
				if !ok {
					return nil, sops.Metadata{}, fmt.Errorf("found %s entry that is not a mapping", metadataKey)
				}
				tree, found = t, true
			}
		}
		branches[bi] = kept
	}
	if !found {
		return nil, sops.Metadata{}, sops.MetadataNotFound
	}
	b, err := json.Marshal(treeToGo(tree))
	if err != nil {
		return nil, sops.Metadata{}, fmt.Errorf("reading sops metadata: %w", err)
	}
	var m ageMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, sops.Metadata{}, fmt.Errorf("reading sops metadata: %w", err)
	}
	md, err := m.internal()
	return branches, md, err
}

// internal is the metadata as SOPS holds it, with its defaults.
func (m ageMetadata) internal() (sops.Metadata, error) {
	lastModified, err := time.Parse(time.RFC3339, m.LastModified)
	if err != nil {
		return sops.Metadata{}, fmt.Errorf("sops metadata lastmodified: %w", err)
	}
	md := sops.Metadata{
		ShamirThreshold: m.ShamirThreshold, Version: m.Version, MessageAuthenticationCode: m.MAC,
		LastModified: lastModified, MACOnlyEncrypted: m.MACOnlyEncrypted,
		UnencryptedSuffix: m.UnencryptedSuffix, EncryptedSuffix: m.EncryptedSuffix,
		UnencryptedRegex: m.UnencryptedRegex, EncryptedRegex: m.EncryptedRegex,
		UnencryptedCommentRegex: m.UnencryptedCommentRegex, EncryptedCommentRegex: m.EncryptedCommentRegex,
	}
	rules := 0
	for _, r := range []string{m.UnencryptedSuffix, m.EncryptedSuffix, m.UnencryptedRegex, m.EncryptedRegex,
		m.UnencryptedCommentRegex, m.EncryptedCommentRegex} {
		if r != "" {
			rules++
		}
	}
	switch {
	case rules > 1:
		return sops.Metadata{}, errors.New("sops metadata sets more than one of encrypted_suffix, unencrypted_suffix, " +
			"encrypted_regex, unencrypted_regex, encrypted_comment_regex, or unencrypted_comment_regex")
	case rules == 0:
		md.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	groups := m.KeyGroups
	if len(m.Age) > 0 || len(groups) == 0 {
		groups = []ageGroup{{Age: m.Age}}
	}
	for _, g := range groups {
		group := sops.KeyGroup{}
		for _, k := range g.Age {
			group = append(group, &sopsage.MasterKey{EncryptedKey: k.Enc, Recipient: k.Recipient})
		}
		md.KeyGroups = append(md.KeyGroups, group)
	}
	return md, nil
}

// treeToGo turns SOPS values into plain Go values, comments dropped.
func treeToGo(v any) any {
	switch v := v.(type) {
	case sops.TreeBranch:
		m := map[string]any{}
		for _, item := range v {
			if k, ok := item.Key.(string); ok {
				m[k] = treeToGo(item.Value)
			}
		}
		return m
	case []any:
		out := []any{}
		for _, x := range v {
			if _, ok := x.(sops.Comment); !ok {
				out = append(out, treeToGo(x))
			}
		}
		return out
	}
	return v
}
