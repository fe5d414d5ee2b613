#!/usr/bin/env bash
# Installs gVisor's runsc to /usr/local/bin when it is missing, by building
# it from its Go module (no Debian package exists): the newest pseudo-version
# of gvisor.dev/gvisor, built static. Takes about a minute on 2 cores.
#   scripts/install-runsc.sh           install when missing
#   scripts/install-runsc.sh --force   rebuild even when present
# RUNSC_VERSION=v0.0.0-... pins a version instead of @latest.
set -euo pipefail
dest=/usr/local/bin/runsc

if [ "${1:-}" != --force ] && [ -x "$dest" ]; then
  echo "install-runsc.sh: $("$dest" --version 2>/dev/null | head -1) already at $dest"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-runsc.sh: run as root (it writes $dest)" >&2
  exit 1
fi
if ! command -v go >/dev/null 2>&1; then
  echo "install-runsc.sh: Go is needed to build runsc (apt-get install golang-go, or Go 1.22+)" >&2
  exit 1
fi

# build outside any module so that no go.mod is touched
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
version=${RUNSC_VERSION:-$(GOFLAGS= go list -m gvisor.dev/gvisor@latest | awk '{print $2}')}
if [ -z "$version" ]; then
  echo "install-runsc.sh: could not resolve gvisor.dev/gvisor@latest (is the Go module proxy reachable?)" >&2
  exit 1
fi
echo "install-runsc.sh: building runsc from gvisor.dev/gvisor@$version"
GOBIN="$work/bin" CGO_ENABLED=0 GOFLAGS= go install "gvisor.dev/gvisor/runsc@$version"
install -m 0755 "$work/bin/runsc" "$dest"
echo "install-runsc.sh: installed $("$dest" --version | head -1) at $dest"
