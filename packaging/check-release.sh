#!/usr/bin/env bash
# Checks the release configuration and what it makes: goreleaser check,
# a snapshot release (archives, checksums, .deb and .rpm in dist/), then
# the .deb installed on this machine (it must be Debian-like and this
# must run as root, as in CI's container): corral --version, the bash
# completion, the man page and the systemd user unit are there, and the
# package is removed again.
#
# Usage: packaging/check-release.sh
# Installs goreleaser (pinned below) with go install when it is missing.
# CORRAL_RELEASE_BUILT=1 checks what dist/ holds already, without goreleaser.
set -euo pipefail
cd "$(dirname "$0")/.."

goreleaser_version=v2.15.1
export PATH="$PATH:$(go env GOPATH)/bin"

if [[ -n "${CORRAL_RELEASE_BUILT:-}" ]]; then
  :
elif ! command -v goreleaser >/dev/null 2>&1; then
  echo "installing goreleaser $goreleaser_version (a few minutes, once)"
  start=$SECONDS
  go install "github.com/goreleaser/goreleaser/v2@$goreleaser_version"
  echo "goreleaser installed in $((SECONDS - start)) s"
fi

if [[ -z "${CORRAL_RELEASE_BUILT:-}" ]]; then
  goreleaser check
  goreleaser release --snapshot --clean --skip=publish
fi

ls dist/*.tar.gz dist/*.deb dist/*.rpm dist/checksums.txt
(cd dist && sha256sum --check --ignore-missing checksums.txt)

# Every archive holds the binary, completions and a man page.
for a in dist/*.tar.gz; do
  listing=$(tar -tzf "$a")
  for want in corral completions/corral.bash completions/_corral completions/corral.fish man/corral.1.gz systemd/corral.service; do
    grep -qx "$want" <<<"$listing" || { echo "$a lacks $want" >&2; exit 1; }
  done
done

# CORRAL_DPKG_ROOT=DIR installs into DIR (dpkg --root, a database of its
# own) rather than into this machine's /: a try on a machine that is not
# a throwaway container.
root=${CORRAL_DPKG_ROOT:-}
if [[ -z "$root" ]] && { [[ $(id -u) -ne 0 ]] || ! command -v dpkg >/dev/null 2>&1; }; then
  echo "not root on a Debian-like system: the .deb is not installed here"
  exit 0
fi
dpkg=(dpkg)
if [[ -n "$root" ]]; then
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
  touch "$root/var/lib/dpkg/status"
  dpkg=(dpkg --root="$root" --force-not-root --force-script-chrootless --log=/dev/null)
fi
deb=$(ls dist/*_linux_amd64.deb)
if "${dpkg[@]}" -s corral >/dev/null 2>&1; then
  echo "a corral package is installed already: not touching it" >&2
  exit 1
fi
command -v man >/dev/null 2>&1 || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq man-db
}
# --path-include: a container image may leave man pages out (path-exclude).
"${dpkg[@]}" --path-include="/usr/share/man/man1/corral*" -i "$deb"
trap '"${dpkg[@]}" -r corral >/dev/null' EXIT
# No "| head" or "| grep -q" under pipefail: the reader leaving early
# kills the writer with SIGPIPE, and the check fails at random.
version=$("$root/usr/bin/corral" --version)
version=${version%%$'\n'*}
echo "$version"
[[ $version == "corral v"* ]] || { echo "corral --version does not name a version: $version" >&2; exit 1; }
for f in /usr/share/bash-completion/completions/corral /usr/share/zsh/vendor-completions/_corral \
  /usr/share/fish/vendor_completions.d/corral.fish /usr/lib/systemd/user/corral.service \
  /usr/share/man/man1/corral.1.gz; do
  test -s "$root$f" || { echo "the package did not install $f" >&2; exit 1; }
done
if [[ -z "$root" ]]; then
  man -w corral
  page=$(man corral)
else
  page=$(man -l "$root/usr/share/man/man1/corral.1.gz")
fi
[[ $page == *corral* ]] || { echo "man corral shows no page" >&2; exit 1; }
"${dpkg[@]}" -r corral
trap - EXIT
if [[ $("${dpkg[@]}" -s corral 2>/dev/null) == *"Status: install ok installed"* ]] || [[ -e $root/usr/bin/corral ]]; then
  echo "dpkg -r left corral installed" >&2
  exit 1
fi
echo "release check passed"
