package sopsenc

import (
	"testing"
	"time"

	"github.com/getsops/sops/v3"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/stores"
	. "github.com/onsi/gomega"
)

// TestMetadataAsSops reads metadata that SOPS' stores package wrote, in the
// shapes SOPS writes for age keys, and expects what that package reads;
// writing one key group gives the bytes SOPS writes.
func TestMetadataAsSops(t *testing.T) {
	key := func(r, enc string) *sopsage.MasterKey { return &sopsage.MasterKey{Recipient: r, EncryptedKey: enc} }
	base := sops.Metadata{
		LastModified: time.Date(2026, 12, 1, 19, 0, 3, 0, time.UTC), MessageAuthenticationCode: "ENC[mac]",
		Version: "3.13.3", KeyGroups: []sops.KeyGroup{{key("age1a", "A"), key("age1b", "B")}},
	}
	variants := map[string]func(m *sops.Metadata){
		"encrypted regex":    func(m *sops.Metadata) { m.EncryptedRegex = EncryptedRegex },
		"no rule (default)":  func(m *sops.Metadata) {},
		"encrypted suffix":   func(m *sops.Metadata) { m.EncryptedSuffix = "_enc" },
		"comment regex":      func(m *sops.Metadata) { m.UnencryptedCommentRegex = "^plain" },
		"MAC only encrypted": func(m *sops.Metadata) { m.EncryptedRegex = "^data$"; m.MACOnlyEncrypted = true },
		"Shamir key groups": func(m *sops.Metadata) {
			m.KeyGroups = []sops.KeyGroup{{key("age1a", "A")}, {key("age1b", "B"), key("age1c", "C")}}
			m.ShamirThreshold = 2
		},
	}
	doc := sops.TreeBranch{{Key: "kind", Value: "Secret"}, {Key: "data", Value: sops.TreeBranch{{Key: "k", Value: "ENC[v]"}}}}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			md := base
			change(&md)
			withMD, err := stores.SerializeMetadata(sops.Tree{Branches: sops.TreeBranches{append(sops.TreeBranch{}, doc...)}, Metadata: md},
				stores.MetadataOpts{Flatten: stores.MetadataFlattenNone})
			g.Expect(err).NotTo(HaveOccurred())
			written, err := sopsStore().EmitPlainFile(withMD)
			g.Expect(err).NotTo(HaveOccurred())

			want, err := sopsStore().LoadEncryptedFile(written)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := yamlStore{}.LoadEncryptedFile(written)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want))

			if len(md.KeyGroups) == 1 {
				ours, err := yamlStore{}.EmitEncryptedFile(sops.Tree{Branches: sops.TreeBranches{doc}, Metadata: md})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(ours)).To(Equal(string(written)))
			}
		})
	}
}

func TestMetadataErrorsAsSops(t *testing.T) {
	for name, doc := range map[string]string{
		"no metadata":        "kind: Secret\n",
		"metadata not a map": "kind: Secret\nsops: 1\n",
		"two rules": "kind: Secret\nsops:\n    age: [{recipient: age1a, enc: A}]\n    lastmodified: \"2026-12-01T19:00:03Z\"\n" +
			"    mac: m\n    version: 3.13.3\n    encrypted_regex: x\n    encrypted_suffix: y\n",
		"bad time": "kind: Secret\nsops:\n    age: [{recipient: age1a, enc: A}]\n    lastmodified: yesterday\n    mac: m\n    version: 3.13.3\n",
	} {
		_, wantErr := sopsStore().LoadEncryptedFile([]byte(doc))
		_, err := yamlStore{}.LoadEncryptedFile([]byte(doc))
		if wantErr == nil || err == nil {
			t.Errorf("%s: error %v, SOPS' store %v; want both to refuse", name, err, wantErr)
		}
	}
}
