#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from
# the Go module proxy into $1 (a version-keyed folder under bin/), once, for
# test/monitoring. The wrapper module beside this script pins the version.
# The build leaves out Prometheus' service-discovery plugins (the
# remove_all_sd tag), which promtool's rule commands do not use: that halves
# the cold build (about 3.5 min instead of 10 on 2 cores).
set -euo pipefail

out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -x "$out/promtool" ]]; then
  exit 0
fi
version=$(awk -v m=github.com/prometheus/prometheus '($1=="require" && $2==m) || $1==m {print ($1=="require" ? $3 : $2); exit}' "$here/go.mod")
echo ">> building promtool $version into $out (about 3.5 min cold)"
start=$SECONDS
(cd "$here" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -tags remove_all_sd -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
  -o "$out/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool)
mv "$out/promtool.tmp" "$out/promtool"
echo ">> built promtool in $((SECONDS - start)) s"
"$out/promtool" --version | head -1
