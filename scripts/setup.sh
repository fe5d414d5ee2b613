#!/usr/bin/env bash
# Installs (on Debian, as root) what isobench needs and starts the daemons
# it uses. Idempotent: installs only what is missing, starts only what is
# not running.
#   scripts/setup.sh demo   what `make demo` needs (Docker, busybox)
#   scripts/setup.sh test   what `make test` needs (every platform and tool)
set -euo pipefail
what=${1:-demo}

demo_pkgs=(docker.io busybox-static file iproute2)
test_pkgs=("${demo_pkgs[@]}" sysbench mmdebstrap wrk apache2-utils redis-tools nginx apache2 redis-server mariadb-server fio iperf3 iperf sockperf runc crun systemd-container lxc qemu-system-x86 linux-image-cloud-amd64 e2fsprogs podman lxd chromium openssh-server openssh-client iptables tmux vsftpd lftp samba smbclient postfix postal wget curl openjdk-17-jre-headless python3-pip python3-numpy)

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

if ! command -v go >/dev/null 2>&1; then
  echo "setup.sh: Go is missing: install Go 1.22 or newer (e.g. apt-get install golang-go)" >&2
  exit 1
fi

# dockerd: start it ourselves when no init system does.
if ! docker info >/dev/null 2>&1; then
  echo "setup.sh: starting dockerd"
  (setsid nohup dockerd >/var/log/isobench-dockerd.log 2>&1 &)
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
