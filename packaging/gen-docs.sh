#!/usr/bin/env bash
# Generates what the release archives and packages ship besides the
# binary: shell completions (corral completion bash|zsh|fish) and man
# pages (corral docs man DIR: one per command), under packaging/generated/.
#
# Usage: packaging/gen-docs.sh [CORRAL]   (CORRAL: a corral binary for this
# machine; by default one is built from the tree)
set -euo pipefail
cd "$(dirname "$0")/.."

out=packaging/generated
rm -rf "$out"
mkdir -p "$out/completions" "$out/man"

corral=${1:-}
if [[ -z "$corral" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  corral="$tmp/corral"
  CGO_ENABLED=0 go build -o "$corral" ./cmd/corral
fi

"$corral" completion bash >"$out/completions/corral.bash"
"$corral" completion zsh >"$out/completions/_corral"
"$corral" completion fish >"$out/completions/corral.fish"

"$corral" docs man "$out/man" >/dev/null
for f in "$out/man/"*.[1-9]; do
  gzip -9 -n -f "$f"
done
ls "$out/completions" "$out/man"
