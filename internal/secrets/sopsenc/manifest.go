package sopsenc

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// secret is one parsed and validated v1 Secret manifest.
type secret struct {
	obj map[string]any
	ref string // "Secret <ns>/<name>", for errors
}

func secretRef(ns, name string) string {
	switch {
	case name == "":
		return "Secret manifest"
	case ns == "":
		return "Secret " + name
	default:
		return "Secret " + ns + "/" + name
	}
}

// parseSecret parses exactly one YAML (or JSON) document holding a v1
// Secret and checks what SOPS and Kubernetes need. Errors name the Secret
// and the offending key, never a value.
func parseSecret(manifest []byte) (*secret, error) {
	doc, err := singleDocument(manifest)
	if err != nil {
		return nil, fmt.Errorf("Secret manifest: %w", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return nil, fmt.Errorf("Secret manifest: parsing YAML: %w", err)
	}
	if obj == nil {
		return nil, errors.New("Secret manifest: empty document")
	}
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	s := &secret{obj: obj, ref: secretRef(ns, name)}
	if v, _ := obj["apiVersion"].(string); v != "v1" {
		return nil, fmt.Errorf("%s: apiVersion must be v1", s.ref)
	}
	if k, _ := obj["kind"].(string); k != "Secret" {
		return nil, fmt.Errorf("%s: kind must be Secret", s.ref)
	}
	if md == nil || name == "" {
		return nil, fmt.Errorf("%s: metadata.name is required", s.ref)
	}
	if _, ok := obj["sops"]; ok {
		return nil, fmt.Errorf("%s: already holds a top-level sops key (already encrypted?)", s.ref)
	}
	if a, ok := md["annotations"]; ok && a != nil {
		if _, ok := a.(map[string]any); !ok {
			return nil, fmt.Errorf("%s: metadata.annotations must be a map", s.ref)
		}
	}
	for _, field := range []string{"data", "stringData"} {
		v, ok := obj[field]
		if !ok {
			continue
		}
		if v == nil {
			delete(obj, field)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: %s must be a map", s.ref, field)
		}
		for k, val := range m {
			if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
				return nil, fmt.Errorf("%s: %s key %q is invalid: %s", s.ref, field, truncate(k, 100), strings.Join(errs, "; "))
			}
			str, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %s key %q must hold a string", s.ref, field, k)
			}
			if field == "data" {
				if _, err := base64.StdEncoding.DecodeString(str); err != nil {
					return nil, fmt.Errorf("%s: data key %q is not valid base64", s.ref, k)
				}
			}
		}
	}
	return s, nil
}

// singleDocument returns the only non-empty document of a YAML stream.
func singleDocument(in []byte) ([]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	var found []byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		if isBlank(doc) {
			continue
		}
		if found != nil {
			return nil, errors.New("holds more than one YAML document")
		}
		found = doc
	}
	if found == nil {
		return nil, errors.New("empty document")
	}
	return found, nil
}

// isBlank reports whether a YAML document holds only whitespace and comments.
func isBlank(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			return false
		}
	}
	return true
}

func (s *secret) annotations() map[string]any {
	md := s.obj["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	return a
}

func (s *secret) setAnnotation(k, v string) {
	md := s.obj["metadata"].(map[string]any)
	a := s.annotations()
	if a == nil {
		a = map[string]any{}
		md["annotations"] = a
	}
	a[k] = v
}

// yaml renders the Secret with map keys sorted and no comments: the same
// key order as the JSON kustomize-controller hands to SOPS, so the SOPS MAC
// also verifies on that path.
func (s *secret) yaml() ([]byte, error) {
	out, err := yaml.Marshal(s.obj)
	if err != nil {
		return nil, fmt.Errorf("%s: rendering canonical YAML: %w", s.ref, err)
	}
	return out, nil
}

// canonicalJSON is the Secret without the digest annotation, keys sorted:
// the plaintext the digest covers.
func (s *secret) canonicalJSON() ([]byte, error) {
	md := s.obj["metadata"].(map[string]any)
	mdCopy := make(map[string]any, len(md))
	for k, v := range md {
		mdCopy[k] = v
	}
	if a := s.annotations(); a != nil {
		aCopy := make(map[string]any, len(a))
		for k, v := range a {
			if k != DigestAnnotation {
				aCopy[k] = v
			}
		}
		if len(aCopy) == 0 {
			delete(mdCopy, "annotations")
		} else {
			mdCopy["annotations"] = aCopy
		}
	}
	objCopy := make(map[string]any, len(s.obj))
	for k, v := range s.obj {
		objCopy[k] = v
	}
	objCopy["metadata"] = mdCopy
	out, err := json.Marshal(objCopy) // map keys sorted
	if err != nil {
		return nil, fmt.Errorf("%s: rendering canonical JSON: %w", s.ref, err)
	}
	return out, nil
}

// canonicalYAML re-renders a YAML document with sorted keys and Kubernetes'
// usual two-space indentation.
func canonicalYAML(in []byte) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(in, &obj); err != nil {
		return nil, fmt.Errorf("parsing decrypted document: %w", err)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("rendering decrypted document: %w", err)
	}
	return out, nil
}

// sortedStrings returns the unique values of in, sorted.
func sortedStrings(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
