package delivery

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// gitFile is one rendered object as the Git sink commits it.
type gitFile struct {
	id      canon.ObjectID
	version string
	path    string // relative to the sink's path
	data    []byte
	secret  []byte // plaintext manifest of a Secret, encrypted on commit
	// obj is the object as Flux will apply it, for checks before a commit.
	obj *unstructured.Unstructured
	// holds is committed content found to hold secret's plaintext, so
	// that seal does not compare it again.
	holds []byte
}

// fileHeader starts every plain file, for people browsing the repository.
const fileHeader = "# Rendered by Apiary for %s. Edits are overwritten; change the %s instead.\n"

// encodeFile turns a desired object into its file: the direct sink's
// canonical form with owner labels and applied-digest annotation, without
// owner references, as YAML with sorted keys. Owner references name UIDs
// of this cluster, which a cluster rebuilt from the repository would not
// have (its garbage collector would delete the objects): committed objects
// are tied to their owner by the labels instead. Secrets keep their
// plaintext aside for encryption.
func encodeFile(mapper meta.RESTMapper, owner Owner, o *unstructured.Unstructured, scopes map[schema.GroupVersionKind]bool, unit string) (*gitFile, error) {
	it, err := prepareItem(mapper, owner, o, scopes, true)
	if err != nil {
		return nil, err
	}
	if unit != "" {
		ann := it.obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationShardUnit] = unit
		it.obj.SetAnnotations(ann)
	}
	data, err := yaml.Marshal(it.obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding YAML: %w", it.id.Describe(), err)
	}
	f := &gitFile{id: it.id, version: it.gvk.Version, path: gitrepo.ObjectPath(it.id.Namespace, it.id.Kind, it.id.Name), obj: it.obj}
	if canon.IsSecret(it.gvk) {
		f.secret = data
		return f, nil
	}
	f.data = append([]byte(fmt.Sprintf(fileHeader, owner, owner.Kind)), data...)
	return f, nil
}

// sealFile gives a Secret file its committed bytes: the current committed form
// when it holds the same plaintext, otherwise a new encryption.
func sealFile(enc seal.Encrypter, f *gitFile, current []byte) error {
	if f.secret == nil {
		return nil
	}
	data, err := seal.Seal(enc, f.secret, current, f.holds)
	if err != nil {
		return fmt.Errorf("%s: %w", f.id.Describe(), err)
	}
	f.data = data
	return nil
}

// fileMeta is the part of a committed file the sink reads back.
type fileMeta struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// fileUnit returns the shard unit committed file content names
// (AnnotationShardUnit), "" when none; read like the owner labels.
func fileUnit(data []byte) string {
	if data == nil {
		return ""
	}
	var m fileMeta
	if err := yaml.Unmarshal(stripComments(data), &m); err != nil {
		return ""
	}
	return m.Metadata.Annotations[AnnotationShardUnit]
}

// fileOwnerOther returns a description of the Apiary owner of committed
// file content when that is another owner than o, and "" otherwise.
func fileOwnerOther(o Owner, data []byte) string {
	if data == nil {
		return ""
	}
	var m fileMeta
	if err := yaml.Unmarshal(stripComments(data), &m); err != nil {
		return ""
	}
	return o.heldByOther(m.Metadata.Labels)
}

// fileOwner returns the Apiary owner that committed file content names in
// its owner labels; false when it names none.
func fileOwner(data []byte) (Owner, bool) {
	if data == nil {
		return Owner{}, false
	}
	var m fileMeta
	if err := yaml.Unmarshal(stripComments(data), &m); err != nil {
		return Owner{}, false
	}
	l := m.Metadata.Labels
	kind, name := l[LabelOwnerKind], l[LabelOwnerName]
	if kind == "" || name == "" {
		return Owner{}, false
	}
	return Owner{Kind: kind, Namespace: l[LabelOwnerNamespace], Name: name}, true
}

// ownedBy reports whether committed file content carries o's owner labels.
func ownedBy(o Owner, data []byte) bool {
	var m fileMeta
	if err := yaml.Unmarshal(stripComments(data), &m); err != nil {
		return false
	}
	return o.Owns(m.Metadata.Labels)
}

// stripComments drops leading comment lines, which the YAML decoder would
// accept anyway; it keeps decoding cheap and independent of the header.
func stripComments(data []byte) []byte {
	for bytes.HasPrefix(data, []byte("#")) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}
