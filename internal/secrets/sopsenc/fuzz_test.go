package sopsenc

import (
	"encoding/base64"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

func FuzzEncryptDecrypt(f *testing.F) {
	id, rec, err := GenerateAgeKey()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("password", []byte("s3cret"), "text")
	f.Add("tls.crt", []byte{0, 0xff, '\n', ':'}, "line1\nline2: x\n")
	f.Add("k", []byte{}, "")
	f.Add("a-b_c.d", []byte("ENC[AES256_GCM,data:x]"), "'\"#{}[]&*!|>%@`")
	f.Fuzz(func(t *testing.T, key string, data []byte, text string) {
		obj := map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s", "namespace": "ns"},
			"data":     map[string]any{key: base64.StdEncoding.EncodeToString(data)},
		}
		if utf8.ValidString(text) {
			obj["stringData"] = map[string]any{key: text}
		}
		in, err := yaml.Marshal(obj)
		if err != nil {
			t.Skip()
		}
		out, err := Encrypt(in, []string{rec}, testSalt)
		if err != nil {
			return // invalid keys are refused; no panic is the property
		}
		plain, err := Decrypt(out, id)
		if err != nil {
			t.Fatalf("decrypting own output: %v", err)
		}
		var got map[string]any
		if err := yaml.Unmarshal(plain, &got); err != nil {
			t.Fatalf("parsing decrypted output: %v", err)
		}
		d, _ := got["data"].(map[string]any)
		if d[key] != base64.StdEncoding.EncodeToString(data) {
			t.Fatalf("data %q changed in round trip", key)
		}
		if utf8.ValidString(text) {
			sd, _ := got["stringData"].(map[string]any)
			if sd[key] != text {
				t.Fatalf("stringData %q changed in round trip: %q -> %q", key, text, sd[key])
			}
		}
	})
}

func FuzzDecrypt(f *testing.F) {
	id, rec, err := GenerateAgeKey()
	if err != nil {
		f.Fatal(err)
	}
	valid, err := Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n"), []string{rec}, testSalt)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte("sops:\n  mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		// Any input: an error or a plaintext, never a panic.
		_, _ = Decrypt(doc, id)
		_ = DigestOf(doc)
	})
}
