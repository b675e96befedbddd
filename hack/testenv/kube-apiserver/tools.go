//go:build tools

// Package tools pins k8s.io/kubernetes so that `go build` can produce the
// kube-apiserver binary the envtest control plane runs. It is never imported.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
