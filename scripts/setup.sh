#!/usr/bin/env bash
# Installs (on Debian, as root) what isobench needs and starts the daemons
# it uses. Idempotent: installs only what is missing, starts only what is
# not running.
#   scripts/setup.sh demo   what `make demo` needs (Docker, busybox, Go)
#   scripts/setup.sh test   what `make test` needs (every platform and tool)
#   scripts/setup.sh go-ok  exit 0 when the go on PATH is as new as go.mod asks
#                           (the Makefile asks, to choose its go; no root needed)
#
# Go: when the go on PATH is missing or older than go.mod's `go` line (Debian
# 12's golang-go is 1.19), setup.sh fetches Go's own toolchain for that
# version from the Go module proxy, the module golang.org/toolchain
# (https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go<VERSION>.linux-<ARCH>.zip,
# about 70 MB), checks it against the sha256 pinned below (or, for a version
# not pinned, against its h1: hash in Go's checksum database, sum.golang.org),
# and unpacks it into /usr/local/lib/isobench-go, outside the repository. The
# Makefile puts /usr/local/lib/isobench-go/bin first on PATH when the go on
# PATH is not new enough; nothing else on the system changes.
set -euo pipefail
what=${1:-demo}
root=$(cd "$(dirname "$0")/.." && pwd)

GO_HOME=/usr/local/lib/isobench-go
# sha256 of the toolchain module zips, checked here against the h1: hashes
# sum.golang.org records (go1.26.8: linux-amd64
# h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=, linux-arm64
# h1:sYL/O6MqS68ML0kjsQ36WoYIpJqkw60TxizWUYUKQMc=). A go.mod bump without a
# new pin falls back to the checksum database.
declare -A go_zip_sha256=(
  [1.26.8.linux-amd64]=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
  [1.26.8.linux-arm64]=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99
)

# go_want: the Go version go.mod asks for (its `go` line).
go_want() { awk '$1 == "go" { print $2; exit }' "$root/go.mod"; }

# go_version GO: GO's version without the "go" prefix, or nothing. Asked
# from / with GOTOOLCHAIN=local so no go.mod makes it switch toolchains.
go_version() { { (cd / && GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || true; } | sed -n 's/^go//p'; }

# version_ge A B: A is B or newer.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# go_ok GO: GO runs and is as new as go.mod asks.
go_ok() {
  local v
  v=$(go_version "$1")
  [ -n "$v" ] && version_ge "$v" "$(go_want)"
}

# h1_of DIR: the h1: hash of the files under DIR, as Go's dirhash.Hash1
# computes a module zip's (sha256 of the sorted "SHA256  NAME" lines).
h1_of() {
  local hex
  hex=$(cd "$1" && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  printf "h1:%s\n" "$(printf "$(sed 's/../\\x&/g' <<<"$hex")" | base64)"
}

# install_go: Go's toolchain for go.mod's version into $GO_HOME, checked.
install_go() {
  local want arch mod url tmp sum h1 line
  want=$(go_want)
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "setup.sh: no Go toolchain for $(uname -m) here: install Go $want or newer yourself" >&2; exit 1 ;;
  esac
  local need=()
  for p in curl ca-certificates unzip; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup.sh: installing ${need[*]} (to fetch Go)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  mod="golang.org/toolchain@v0.0.1-go$want.linux-$arch"
  url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$want.linux-$arch.zip"
  echo "setup.sh: fetching Go $want ($url)"
  mkdir -p "$(dirname "$GO_HOME")"
  tmp=$(mktemp -d "$GO_HOME.new.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --proto '=https' --tlsv1.2 --retry 3 -o "$tmp/go.zip" "$url"
  sum=${go_zip_sha256[$want.linux-$arch]:-}
  if [ -n "$sum" ]; then
    echo "$sum  $tmp/go.zip" | sha256sum -c --quiet - ||
      { echo "setup.sh: $url does not match the sha256 pinned in setup.sh: not installed" >&2; exit 1; }
    unzip -q "$tmp/go.zip" -d "$tmp/x"
  else
    unzip -q "$tmp/go.zip" -d "$tmp/x"
    h1=$(h1_of "$tmp/x")
    # Go's checksum database, or its mirror on the proxy when sum.golang.org
    # itself does not resolve.
    line=$(curl -fsSL --proto '=https' --tlsv1.2 "https://sum.golang.org/lookup/$mod" 2>/dev/null ||
      curl -fsSL --proto '=https' --tlsv1.2 "https://proxy.golang.org/sumdb/sum.golang.org/lookup/$mod") || true
    grep -qxF "${mod%@*} ${mod#*@} $h1" <<<"$line" ||
      { echo "setup.sh: $url ($h1) does not match Go's checksum database: not installed" >&2; exit 1; }
  fi
  rm -f "$tmp/go.zip"
  [ "$(go_version "$tmp/x/$mod/bin/go")" = "$want" ] ||
    { echo "setup.sh: the toolchain from $url does not say it is Go $want: not installed" >&2; exit 1; }
  rm -rf "$GO_HOME.old"
  [ ! -e "$GO_HOME" ] || mv "$GO_HOME" "$GO_HOME.old"
  mv "$tmp/x/$mod" "$GO_HOME"
  rm -rf "$GO_HOME.old" "$tmp"
  trap - EXIT
  echo "setup.sh: Go $want in $GO_HOME/bin (the Makefile uses it when the go on PATH is older)"
}

if [ "$what" = go-ok ]; then
  go_ok "$(command -v go || echo go)"
  exit
fi

demo_pkgs=(docker.io busybox-static file iproute2)
test_pkgs=("${demo_pkgs[@]}" sysbench mmdebstrap wrk apache2-utils redis-tools nginx apache2 redis-server mariadb-server fio iperf3 iperf sockperf hyperfine sqlite3 runc crun systemd-container lxc qemu-system-x86 linux-image-cloud-amd64 e2fsprogs podman lxd chromium openssh-server openssh-client iptables tmux vsftpd lftp samba smbclient postfix postal jmeter jmeter-ftp maven wget curl openjdk-17-jre-headless python3-pip python3-numpy)

case "$what" in
  demo) pkgs=("${demo_pkgs[@]}") ;;
  test) pkgs=("${test_pkgs[@]}") ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "setup.sh: run as root (it installs Debian packages and starts dockerd)" >&2
  exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go: the go on PATH when it is new enough, else ours (installed or fetched).
if ! go_ok "$(command -v go || echo go)"; then
  go_ok "$GO_HOME/bin/go" || install_go
  export PATH="$GO_HOME/bin:$PATH"   # for install-runsc.sh below
fi

# dockerd: start it ourselves when no init system does. Published ports
# (network=nat) take the kernel's NAT, as a client on another machine's
# would, not docker-proxy (a userland relay for the host's own loopback
# connections, which reset ab at 4,000 users): --userland-proxy=false.
if ! docker info >/dev/null 2>&1; then
  echo "setup.sh: starting dockerd"
  (setsid nohup dockerd --userland-proxy=false >/var/log/isobench-dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "setup.sh: dockerd did not start; see /var/log/isobench-dockerd.log" >&2; tail -5 /var/log/isobench-dockerd.log >&2; exit 1; }
fi
if [ "$what" = test ]; then
  "$(dirname "$0")/install-runsc.sh"   # gVisor: built from its Go module (no Debian package)
  "$(dirname "$0")/start-lxd.sh"       # LXD: daemon started detached, dir pool preseeded
  # Spark (the spark workload and its image profile): pyspark from PyPI
  # carries Spark's jars; MLlib's K-means needs NumPy.
  python3 -c 'import pyspark, numpy' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages 'pyspark==3.5.7' numpy
fi
echo "setup.sh: ready ($what)"
