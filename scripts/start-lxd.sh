#!/usr/bin/env bash
# Starts the LXD daemon when it is not running (no init system needed: it
# runs detached under setsid, logging to /var/log/isobench-lxd.log) and
# initialises it once with a preseed: a "dir" storage pool named isobench
# and no managed network (isobench attaches instances to its own bridge).
# `lxd init --auto` is avoided: it fails on hosts without ping(8).
#   scripts/start-lxd.sh
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "start-lxd.sh: run as root" >&2
  exit 1
fi
if ! command -v lxd >/dev/null 2>&1; then
  echo "start-lxd.sh: installing lxd"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lxd >/dev/null
fi

sock=/var/lib/lxd/unix.socket
up() { lxd waitready --timeout 1 >/dev/null 2>&1; }
if ! up; then
  echo "start-lxd.sh: starting lxd"
  getent group lxd >/dev/null || groupadd --system lxd
  (setsid nohup lxd --group lxd --logfile /var/log/isobench-lxd.log >/dev/null 2>&1 &)
  lxd waitready --timeout 60 || { echo "start-lxd.sh: lxd did not start; see /var/log/isobench-lxd.log" >&2; tail -5 /var/log/isobench-lxd.log >&2; exit 1; }
fi

if ! lxc storage show isobench >/dev/null 2>&1; then
  echo "start-lxd.sh: creating the isobench storage pool"
  lxd init --preseed <<'YAML'
storage_pools:
- name: isobench
  driver: dir
YAML
fi
echo "start-lxd.sh: lxd $(lxd --version) ready at $sock"
