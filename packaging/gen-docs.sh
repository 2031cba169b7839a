#!/usr/bin/env bash
# Generates what the release archives and packages ship besides the
# binary: shell completions (corral completion bash|zsh|fish) and man
# pages (corral docs man DIR; where that command is missing, one page
# made from corral help's pages), under packaging/generated/.
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

# roff_escape makes plain text safe in a roff no-fill block: backslashes
# doubled, and a line starting with . or ' not read as a request.
roff_escape() {
  sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
}

if "$corral" docs man "$out/man" >/dev/null 2>&1; then
  :
else
  # corral docs man is missing: one page, corral(1), from corral help
  # and each command's help page.
  rm -f "$out/man/"*
  page="$out/man/corral.1"
  {
    echo ".TH CORRAL 1 \"\" \"corral\" \"corral manual\""
    echo ".SH NAME"
    echo "corral \\- run terminal coding agents in panes and answer them from one place"
    echo ".SH SYNOPSIS"
    echo ".B corral"
    echo "COMMAND [ARGS] [flags]"
    echo ".SH DESCRIPTION"
    echo ".nf"
    "$corral" help | roff_escape
    echo ".fi"
    echo ".SH COMMANDS"
    # The command names: the first word of each indented line of the
    # help's command list.
    for cmd in $("$corral" help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'); do
      echo ".SS corral $cmd"
      echo ".nf"
      "$corral" help "$cmd" 2>&1 | roff_escape
      echo ".fi"
    done
  } >"$page"
fi
for f in "$out/man/"*.[1-9]; do
  gzip -9 -n -f "$f"
done
ls "$out/completions" "$out/man"
