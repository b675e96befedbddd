package testenv

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FluxSync describes the Flux objects that apply one folder of a Git
// repository: a GitRepository and a Kustomization of the same name, with
// prune and, when DecryptionSecret is set, SOPS decryption.
type FluxSync struct {
	// Namespace and Name of both objects.
	Namespace, Name string
	// URL and Branch of the repository.
	URL, Branch string
	// Path is the folder applied, relative to the repository root.
	Path string
	// DecryptionSecret names a Secret in Namespace holding the age key
	// (identity.agekey); empty for no decryption.
	DecryptionSecret string
	// SecretRef names the Secret in Namespace with the Git credentials of
	// the GitRepository; empty for anonymous access.
	SecretRef string
}

// Objects returns the GitRepository and the Kustomization. Both have long
// intervals: Apiary asks the GitRepository to fetch after each push, and the
// Kustomization follows its source's new revisions, so the tests wait on
// events, not on intervals.
func (s FluxSync) Objects() ([]*unstructured.Unstructured, error) {
	secretRef := ""
	if s.SecretRef != "" {
		secretRef = fmt.Sprintf("  secretRef:\n    name: %s\n", s.SecretRef)
	}
	decryption := ""
	if s.DecryptionSecret != "" {
		decryption = fmt.Sprintf("  decryption:\n    provider: sops\n    secretRef:\n      name: %s\n", s.DecryptionSecret)
	}
	manifests := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  url: %[3]s
  ref:
    branch: %[4]s
  interval: 10m
%[7]s---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  interval: 10m
  retryInterval: 2s
  path: ./%[5]s
  prune: true
  sourceRef:
    kind: GitRepository
    name: %[1]s
%[6]s`, s.Name, s.Namespace, s.URL, s.Branch, s.Path, decryption, secretRef)
	return DecodeObjects([]byte(manifests))
}
