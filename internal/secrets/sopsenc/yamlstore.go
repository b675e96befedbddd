package sopsenc

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/getsops/sops/v3"
	"go.yaml.in/yaml/v3"
)

// yamlStore reads and writes SOPS documents in YAML as SOPS' own YAML store
// (sops/v3/stores/yaml, with the sops CLI's default settings) does, without
// comments, which Encrypt drops anyway and which SOPS leaves out of the MAC.
// SOPS' store takes its settings from sops/v3/config, which links every
// store, the key-group rules and, through sops/v3/publish, the cloud storage
// clients with gRPC and envoy into the manager: 22 MB of its 97 MB binary.
// The metadata is read and written by sopsmeta.go. yamlstore_test.go checks
// that both stores read and write the same.
type yamlStore struct{}

// yamlIndent is the SOPS YAML store's default indentation.
const yamlIndent = 4

// LoadPlainFile parses the documents of a YAML stream into SOPS trees.
func (yamlStore) LoadPlainFile(in []byte) (sops.TreeBranches, error) {
	if len(in) > 0 {
		// As SOPS does: the first document must be a map.
		if err := yaml.NewDecoder(bytes.NewReader(in)).Decode(make(map[string]any)); err != nil {
			return nil, err
		}
	}
	var branches sops.TreeBranches
	d := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var doc yaml.Node
		err := d.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return branches, nil
		}
		if err != nil {
			return nil, fmt.Errorf("unmarshaling input YAML: %w", err)
		}
		branch, err := nodeToBranch(&doc, sops.TreeBranch{})
		if err != nil {
			return nil, fmt.Errorf("unmarshaling input YAML: %w", err)
		}
		branches = append(branches, branch)
	}
}

// LoadEncryptedFile parses an encrypted document and its sops metadata.
func (s yamlStore) LoadEncryptedFile(in []byte) (sops.Tree, error) {
	branches, err := s.LoadPlainFile(in)
	if err != nil {
		return sops.Tree{}, err
	}
	branches, md, err := extractMetadata(branches)
	if err != nil {
		return sops.Tree{}, err
	}
	return sops.Tree{Branches: branches, Metadata: md}, nil
}

// EmitEncryptedFile writes the tree with its metadata under the sops key.
func (s yamlStore) EmitEncryptedFile(in sops.Tree) ([]byte, error) {
	branches, err := serializeMetadata(in)
	if err != nil {
		return nil, err
	}
	return s.EmitPlainFile(branches)
}

// EmitPlainFile writes each tree as one YAML document.
func (yamlStore) EmitPlainFile(branches sops.TreeBranches) ([]byte, error) {
	var b bytes.Buffer
	if len(branches) == 0 {
		return b.Bytes(), nil // the encoder cannot close an empty stream
	}
	e := yaml.NewEncoder(&b)
	e.SetIndent(yamlIndent)
	for _, branch := range branches {
		m, err := branchToNode(branch)
		if err != nil {
			return nil, err
		}
		if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
			return nil, fmt.Errorf("marshaling to YAML: %w", err)
		}
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("marshaling to YAML: %w", err)
	}
	return b.Bytes(), nil
}

// nodeToBranch appends the pairs of a document or mapping node to branch.
func nodeToBranch(n *yaml.Node, branch sops.TreeBranch) (sops.TreeBranch, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			var err error
			if branch, err = nodeToBranch(c, branch); err != nil {
				return nil, err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			var key any
			if err := n.Content[i].Decode(&key); err != nil {
				return nil, err
			}
			v, err := nodeToValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			branch = append(branch, sops.TreeItem{Key: key, Value: v})
		}
	case yaml.SequenceNode:
		return nil, errors.New("YAML documents that are sequences are not supported")
	case yaml.ScalarNode:
		if n.ShortTag() != "!!null" {
			return nil, errors.New("YAML documents that are values are not supported")
		}
	case yaml.AliasNode:
		return nodeToBranch(n.Alias, branch)
	}
	return branch, nil
}

// nodeToValue converts a value node: maps to branches, sequences to slices,
// scalars to what YAML decodes them to (string, int, float, bool, nil).
func nodeToValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		return nodeToBranch(n, sops.TreeBranch{})
	case yaml.SequenceNode:
		var out []any // nil for an empty sequence, as SOPS has it
		for _, c := range n.Content {
			v, err := nodeToValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.AliasNode:
		return nodeToValue(n.Alias)
	}
	return nil, nil
}

func branchToNode(branch sops.TreeBranch) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, item := range branch {
		if _, ok := item.Key.(sops.Comment); ok {
			continue
		}
		k := &yaml.Node{}
		if err := k.Encode(item.Key); err != nil {
			return nil, fmt.Errorf("marshaling key: %w", err)
		}
		v, err := valueToNode(item.Value)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, k, v)
	}
	return m, nil
}

func valueToNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case sops.TreeBranch:
		return branchToNode(v)
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for _, item := range v {
			if _, ok := item.(sops.Comment); ok {
				continue
			}
			n, err := valueToNode(item)
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, n)
		}
		return s, nil
	default:
		n := &yaml.Node{}
		if err := n.Encode(v); err != nil {
			return nil, fmt.Errorf("marshaling value: %w", err)
		}
		return n, nil
	}
}
