#!/bin/sh
# test-sshd.sh: SSH test hosts on this machine, for trying remote platforms
# (host=ssh://...) by hand, e.g. to make the README's multi-host table.
#
#   scripts/test-sshd.sh up [N]   N hosts (default 2): one network namespace
#                                 each on a bridge this script owns, each
#                                 running its own sshd (own host key, own
#                                 cache and temp dir); prints the environment
#                                 and --host flags to use them
#   scripts/test-sshd.sh down     removes everything 'up' made
#
#   eval "$(scripts/test-sshd.sh up 2 | grep ^export)"
#   isobench run --host local $(scripts/test-sshd.sh hosts) --platform native --workload cpu
#
# Runs as root. State (keys, known_hosts, sshd configs) is in $DIR
# (default /tmp/isobench-sshd). The client key and the hosts' keys are
# given through ISOBENCH_SSH_KEY and ISOBENCH_KNOWN_HOSTS, so nothing is
# added to ~/.ssh. The Go tests (internal/remote) build the same thing
# for themselves.
set -eu

DIR=${ISOBENCH_SSHD_DIR:-/tmp/isobench-sshd}
BR=ibsshbr0
NET=10.231.250

die() { echo "test-sshd: $*" >&2; exit 1; }

# $DIR has a fixed name in a directory anyone can write to: what is found
# there (pid, netns and veth files this script acts on as root, keys it
# writes) is believed only when it is root's own directory, writable by no
# one else, in a parent no one else can swap it in
check_dir() {
	p=$(dirname "$DIR")
	if [ "$(stat -c %u "$p")" != 0 ] || { [ -n "$(find "$p" -maxdepth 0 -perm /022)" ] && [ ! -k "$p" ]; }; then
		die "$DIR is in $p, which is not root's or others can write to: refusing to use it"
	fi
	if [ -L "$DIR" ] || { [ -e "$DIR" ] && { [ ! -d "$DIR" ] || [ "$(stat -c %u "$DIR")" != 0 ] || [ -n "$(find "$DIR" -maxdepth 0 -perm /022)" ]; }; }; then
		die "$DIR is not root's own directory (a link, another user's, or writable by others): refusing to use it"
	fi
}

down() {
	check_dir
	if [ -d "$DIR" ]; then
		for pidf in "$DIR"/host*/sshd.pid; do
			[ -f "$pidf" ] && kill "$(cat "$pidf")" 2>/dev/null || true
		done
		for d in "$DIR"/host*; do
			[ -d "$d" ] || continue
			ns=$(cat "$d/netns" 2>/dev/null || true)
			[ -n "$ns" ] || continue
			for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
			ip netns del "$ns" 2>/dev/null || true
			# the kernel removes a namespace's veth lazily: remove ours now
			ip link del "$(cat "$d/veth" 2>/dev/null || echo none)" 2>/dev/null || true
		done
	fi
	ip link del "$BR" 2>/dev/null || true
	rm -rf "$DIR"
}

up() {
	n=${1:-2}
	[ "$(id -u)" = 0 ] || die "run as root"
	[ -x /usr/sbin/sshd ] || apt-get install -y openssh-server >/dev/null
	command -v nsenter >/dev/null || die "nsenter (util-linux) missing"
	down
	check_dir
	mkdir -m 700 "$DIR"
	mkdir -p /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$DIR/id_ed25519"
	ip link add "$BR" type bridge
	ip addr add "$NET.1/24" dev "$BR"
	ip link set "$BR" up
	i=0
	while [ "$i" -lt "$n" ]; do
		h="$DIR/host$i"
		ns="ibtest-sshd-$i"
		addr="$NET.$((i + 2))"
		mkdir -p "$h/cache" "$h/tmp"
		echo "$ns" >"$h/netns"
		echo "ibsshv$i" >"$h/veth"
		ip netns add "$ns"
		ip link add "ibsshv$i" type veth peer name "ibsshv${i}p"
		ip link set "ibsshv${i}p" netns "$ns"
		ip link set "ibsshv$i" master "$BR" up
		ip -n "$ns" addr add "$addr/24" dev "ibsshv${i}p"
		ip -n "$ns" link set "ibsshv${i}p" up
		ip -n "$ns" link set lo up
		ssh-keygen -q -t ed25519 -N '' -f "$h/host_key"
		cp "$DIR/id_ed25519.pub" "$h/authorized_keys"
		echo "$addr $(cut -d' ' -f1,2 "$h/host_key.pub")" >"$h/known_hosts"
		cat "$h/known_hosts" >>"$DIR/known_hosts"
		echo "$addr" >"$h/addr"
		cat >"$h/sshd_config" <<EOF
Port 22
ListenAddress $addr
HostKey $h/host_key
PidFile $h/sshd.pid
AuthorizedKeysFile $h/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv XDG_CACHE_HOME=$h/cache TMPDIR=$h/tmp
EOF
		# nsenter switches only the network namespace ("ip netns exec"
		# would remount /sys and hide the cgroup hierarchies)
		nsenter --net="/run/netns/$ns" /usr/sbin/sshd -f "$h/sshd_config"
		i=$((i + 1))
	done
	echo "export ISOBENCH_SSH_KEY=$DIR/id_ed25519 ISOBENCH_KNOWN_HOSTS=$DIR/known_hosts"
	hosts
}

hosts() {
	check_dir
	for a in "$DIR"/host*/addr; do
		[ -f "$a" ] && printf -- '--host ssh://root@%s ' "$(cat "$a")"
	done
	echo
}

case "${1:-}" in
up) shift; up "$@" ;;
down) down ;;
hosts) hosts ;;
*) die "usage: $0 up [N] | hosts | down" ;;
esac
