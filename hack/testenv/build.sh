#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd) from the Go module
# proxy into $1 (a version-keyed folder under bin/), once. setup-envtest's
# download cannot be used where only the module proxy is reachable.
set -euo pipefail

out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
  exit 0
fi

kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$here/kube-apiserver/go.mod")
major=$(echo "${kube_version#v}" | cut -d. -f1)
minor=$(echo "${kube_version#v}" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

echo ">> building etcd into $out (about 30 s cold)"
(cd "$here/etcd" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" .)
mv "$out/etcd.tmp" "$out/etcd"

echo ">> building kube-apiserver $kube_version into $out (about 5 min cold, 1 min warm)"
(cd "$here/kube-apiserver" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
"$out/kube-apiserver" --version
