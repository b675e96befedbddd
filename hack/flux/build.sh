#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from the Go module
# proxy into $1 (a version-keyed folder under bin/), once, for tests that run
# real Flux against an envtest control plane (internal/testenv.StartFlux).
# Each controller has a wrapper module beside this script that pins it.
set -euo pipefail

out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

build() {
  local name=$1 minutes=$2
  if [[ -x "$out/$name" ]]; then
    return 0
  fi
  local version
  version=$(awk -v m="github.com/fluxcd/$name" '($1=="require" && $2==m) || $1==m {print ($1=="require" ? $3 : $2); exit}' "$here/$name/go.mod")
  echo ">> building $name $version into $out (about $minutes min cold)"
  local start=$SECONDS
  (cd "$here/$name" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/$name.tmp" "github.com/fluxcd/$name")
  mv "$out/$name.tmp" "$out/$name"
  echo ">> built $name in $((SECONDS - start)) s"
}

build source-controller 4
build kustomize-controller 2
