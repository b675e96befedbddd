package sopsenc

import (
	"bytes"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

var testSalt = bytes.Repeat([]byte{0x5a}, SaltSize)

// manifest renders a v1 Secret; nil maps are left out.
func manifest(ns, name string, data map[string][]byte, stringData map[string]string) []byte {
	md := map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/name": "colony-a"}}
	if ns != "" {
		md["namespace"] = ns
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": md}
	if data != nil {
		d := map[string]any{}
		for k, v := range data {
			d[k] = base64.StdEncoding.EncodeToString(v)
		}
		obj["data"] = d
	}
	if stringData != nil {
		sd := map[string]any{}
		for k, v := range stringData {
			sd[k] = v
		}
		obj["stringData"] = sd
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return out
}

func newKey(t testing.TB) (identity, recipient string) {
	t.Helper()
	id, rec, err := GenerateAgeKey()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return id, rec
}

// parsed is the generic view of a YAML document.
func parsed(t testing.TB, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	NewWithT(t).Expect(yaml.Unmarshal(doc, &m)).To(Succeed())
	return m
}

func field(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// values returns data (base64 strings) and stringData of a Secret document.
func values(t testing.TB, doc []byte) (data, stringData map[string]any) {
	t.Helper()
	m := parsed(t, doc)
	data, _ = m["data"].(map[string]any)
	stringData, _ = m["stringData"].(map[string]any)
	return data, stringData
}

// emptyToNil treats an empty map like an absent one.
func emptyToNil(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}
