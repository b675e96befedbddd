#!/usr/bin/env bash
# Release notes for a tag, from the commits since the previous tag (all
# commits for the first), grouped by their conventional-commit type:
#   hack/release-notes.sh v0.2.0 > notes.md
# The release workflow runs it; test/release tests it on a scratch repository.
set -euo pipefail

tag=${1:?usage: release-notes.sh TAG}
git rev-parse -q --verify "refs/tags/$tag" >/dev/null || { echo "no tag $tag" >&2; exit 1; }
prev=$(git describe --tags --abbrev=0 --match 'v*' "$tag^" 2>/dev/null || true)
range=${prev:+$prev..}$tag

echo "## Apiary ${tag#v}"
echo
if [ -n "$prev" ]; then echo "Changes since $prev."; else echo "The first release."; fi

# group TITLE GREP-FLAGS REGEX: the commits whose subject matches (or, with
# -v, does not match) a conventional-commit type, as a list with the scope
# in bold.
group() {
  local lines
  lines=$(git log --no-merges --format='%s (%h)' "$range" | grep -E $2 "^($3)(\([^)]*\))?!?: " || true)
  [ -n "$lines" ] || return 0
  printf '\n### %s\n\n' "$1"
  sed -E 's/^[a-z]+(\(([^)]*)\))?(!?): /\3**\2** /; s/\*\*\*\* //; s/^!/**breaking** /; s/^/- /' <<<"$lines"
}
group "Features" -e "feat"
group "Fixes" -e "fix"
group "Performance" -e "perf"
group "Documentation" -e "docs"
group "Other changes" -v "feat|fix|perf|docs"
