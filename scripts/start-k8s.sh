#!/usr/bin/env bash
# Brings up (idempotently) a single-node Kubernetes cluster on this host for
# isobench's k8s platform, from the binaries scripts/build-k8s.sh builds:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd v2
# (runc and runsc runtime handlers) and kubelet, with a CNI bridge of its own
# (cni-isob0, 10.211.77.0/24; no traffic leaves the host), certificates from
# a self-made CA, RuntimeClasses runc and gvisor, and isobench's pause image.
#   scripts/start-k8s.sh          start what is not running, wait for the node to be Ready
#   scripts/start-k8s.sh stop     stop everything it started (pods, daemons, bridge, mounts)
#   scripts/start-k8s.sh status   say what runs
# Admin kubeconfig: /var/lib/isobench/k8s/admin.kubeconfig. Logs: /var/log/isobench-k8s/.
#
# This host has cgroup v1 and no systemd as PID 1; the kubelet needs
#   cgroupDriver: cgroupfs (and containerd's runc SystemdCgroup=false)
#   failCgroupV1: false         (since 1.35 the kubelet refuses cgroup v1 otherwise)
#   cgroupsPerQOS: true (kubepods/[QOS/]pod<uid> under every v1 hierarchy; the
#                                missing hugetlb one is optional): gVisor puts its whole
#                                sandbox in the pod's cgroup, so without it a gvisor pod's
#                                limits were in force nowhere
#   oomScoreAdj: 0 and containerd's restrict_oom_score_adj   (CAP_SYS_RESOURCE is
#                                not in this host's bounding set: no process may lower
#                                oom_score_adj, and every sandbox asked for -998)
#   failSwapOn: false           (harmless without swap; needed where swap exists)
#   imageGCHighThresholdPercent: 100 (imported images cannot be pulled back)
#   localStorageCapacityIsolation: false, evictionHard only for memory.available
# and a node IP that is not loopback (the kubelet refuses 127.0.0.1): the
# bridge's address.
set -euo pipefail

BASE=${K8S_BASE:-/var/lib/isobench/k8s}
RUN=${K8S_RUN:-/run/isobench-k8s}
LOGS=${K8S_LOGS:-/var/log/isobench-k8s}
NODE=${K8S_NODE:-isobench-k8s}
BRIDGE=cni-isob0
SUBNET=10.211.77.0/24
NODE_IP=10.211.77.1
ETCD_PORT=12379
API_PORT=6443
here=$(cd "$(dirname "$0")" && pwd)
BIN=$("$here/build-k8s.sh" --print)
PKI=$BASE/pki
KUBECONFIG_ADMIN=$BASE/admin.kubeconfig
CTD_SOCK=$RUN/containerd/containerd.sock
export PATH="$BIN:$PATH"

log() { echo "start-k8s.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root"

pidfile() { echo "$RUN/$1.pid"; }
running() { local p; p=$(cat "$(pidfile "$1")" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# daemon NAME ARGV...: starts NAME in its own session unless running
daemon() {
  local name=$1; shift
  if running "$name"; then return 0; fi
  log "starting $name"
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

api() { # api METHOD PATH [BODY]: admin request to the apiserver, prints the body
  local m=$1 p=$2
  shift 2
  curl -sS --max-time 20 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    -X "$m" -H 'Content-Type: application/json' ${1:+--data "$1"} "https://127.0.0.1:$API_PORT$p"
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds
wait_for() {
  local what=$1 secs=$2; shift 2
  local end=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || die "$what did not come up in ${secs}s (logs in $LOGS)"
    sleep 1
  done
}

stop_all() {
  if running kube-apiserver && running kubelet; then
    # pods first, while the kubelet runs, so that it tears their sandboxes
    # and network namespaces down through CNI
    api DELETE "/api/v1/namespaces/default/pods?gracePeriodSeconds=0" >/dev/null 2>&1 || true
    for _ in $(seq 60); do
      api GET /api/v1/pods | tr -d ' \n' | grep -q '"items":\[\]' && break
      sleep 1
    done
    sleep 2
  fi
  for d in kubelet kube-scheduler kube-controller-manager kube-apiserver; do
    if running "$d"; then log "stopping $d"; kill "$(cat "$(pidfile "$d")")" 2>/dev/null || true; fi
  done
  if running containerd; then
    # remove every pod sandbox and container this containerd runs
    for ns in k8s.io; do
      for c in $(ctr -a "$CTD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do ctr -a "$CTD_SOCK" -n "$ns" tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
      sleep 1
      for c in $(ctr -a "$CTD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do ctr -a "$CTD_SOCK" -n "$ns" tasks delete -f "$c" >/dev/null 2>&1 || true; done
      for c in $(ctr -a "$CTD_SOCK" -n "$ns" containers ls -q 2>/dev/null); do ctr -a "$CTD_SOCK" -n "$ns" containers delete "$c" >/dev/null 2>&1 || true; done
    done
    log "stopping containerd"; kill "$(cat "$(pidfile containerd)")" 2>/dev/null || true
  fi
  if running etcd; then log "stopping etcd"; kill "$(cat "$(pidfile etcd)")" 2>/dev/null || true; fi
  for d in kubelet kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do
    local p; p=$(cat "$(pidfile "$d")" 2>/dev/null) || continue
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
    kill -9 "$p" 2>/dev/null || true
    rm -f "$(pidfile "$d")"
  done
  # shims left by containerd (they outlive it by design)
  for p in $(pgrep -f "containerd-shim-run[cs]{1,2}.*-address $CTD_SOCK" || true); do kill -9 "$p" 2>/dev/null || true; done
  # mounts under our state directories
  # (|| true: with pipefail, no mount left made grep, and so the script, fail here)
  { awk '{print $5}' /proc/self/mountinfo | grep -E "^($BASE|$RUN)/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done; } || true
  if ip link show "$BRIDGE" >/dev/null 2>&1; then log "removing bridge $BRIDGE"; ip link del "$BRIDGE" || true; fi
  # the kubelet's pod cgroups (kubepods) and containerd's (k8s.io), empty by now
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$BASE/cni/networks" "$RUN/runc" "$RUN/runsc"
  # the pods' logs (podLogsDir) and the kubelet's links to them in
  # /var/log/containers (a fixed path), which it removes only some time
  # after a pod went: a stop right after a test run left them behind
  rm -rf "$LOGS/pods"
  find /var/log/containers -maxdepth 1 -type l -lname "$LOGS/pods/*" -delete 2>/dev/null || true
  log "stopped"
}

status() {
  for d in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    if running "$d"; then echo "$d running (pid $(cat "$(pidfile "$d")"))"; else echo "$d not running"; fi
  done
}

case "${1:-start}" in
  stop) stop_all; exit 0 ;;
  status) status; exit 0 ;;
  start) ;;
  *) die "usage: start-k8s.sh [start|stop|status]" ;;
esac

"$here/build-k8s.sh"
mkdir -p "$BASE" "$RUN" "$LOGS" "$PKI" "$BASE/cni/net.d"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet containerd containerd-shim-runc-v2 containerd-shim-runsc-v1 ctr; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing (scripts/build-k8s.sh builds it)"
done
# containerd runs the runc build-k8s.sh built (BinaryName below: the version
# containerd 2.4 is tested with, and one whose errors name their cause), not
# /usr/sbin/runc (Debian 12's 1.1.5)
RUNC=$BIN/runc
[ -x "$RUNC" ] || die "$RUNC is missing (scripts/build-k8s.sh builds it)"
command -v runsc >/dev/null || log "runsc is missing: the gvisor RuntimeClass will not work (scripts/install-runsc.sh)"
[ -x /usr/lib/cni/bridge ] || die "CNI plugins are needed: apt-get install containernetworking-plugins"
command -v openssl >/dev/null || die "openssl is needed"
command -v curl >/dev/null || die "curl is needed"

# ---------------------------------------------------------------- PKI
cert() { # cert NAME CN [O] [SANS]: a key and a certificate signed by the CA
  local name=$1 cn=$2 o=${3:-} sans=${4:-}
  [ -f "$PKI/$name.crt" ] && return 0
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  local subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o$subj"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}
if [ ! -f "$PKI/ca.crt" ]; then
  log "making the cluster CA and certificates in $PKI"
  openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=isobench-k8s-ca" -days 3650 -sha256 -out "$PKI/ca.crt" 2>/dev/null
fi
cert apiserver kube-apiserver "" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1"
cert admin admin system:masters
cert kubelet "system:node:$NODE" system:nodes "DNS:$NODE,IP:$NODE_IP,IP:127.0.0.1"
cert controller-manager system:kube-controller-manager
cert scheduler system:kube-scheduler
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
[ -f "$PKI/sa.key" ] || { openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null; openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null; }

kubeconfig() { # kubeconfig FILE CERTNAME
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: isobench
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: isobench
  context: {cluster: isobench, user: $2}
current-context: isobench
EOF
}
kubeconfig "$KUBECONFIG_ADMIN" admin
kubeconfig "$BASE/kubelet.kubeconfig" kubelet
kubeconfig "$BASE/controller-manager.kubeconfig" admin  # system:masters: with one identity for all its controllers, system:kube-controller-manager may not untaint nodes
kubeconfig "$BASE/scheduler.kubeconfig" scheduler

# ---------------------------------------------------------------- network
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
  log "creating bridge $BRIDGE ($NODE_IP on $SUBNET)"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
fi
cat >"$BASE/cni/net.d/10-isobench.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "isob",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$BASE/cni/networks",
        "ranges": [[{"subnet": "$SUBNET", "gateway": "$NODE_IP"}]]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

# ---------------------------------------------------------------- etcd
mkdir -p "$BASE/etcd"
daemon etcd etcd --name isobench --data-dir "$BASE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "isobench=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" \
  --quota-backend-bytes 1073741824 --log-level warn
wait_for etcd 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

# ---------------------------------------------------------------- containerd
mkdir -p "$RUN/containerd" "$BASE/containerd"
cat >"$BASE/containerd.toml" <<EOF
version = 3
root = "$BASE/containerd"
state = "$RUN/containerd/state"
[grpc]
  address = "$CTD_SOCK"
[ttrpc]
  address = "$CTD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = 'registry.k8s.io/pause:isobench'
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  # no process here may lower oom_score_adj (CAP_SYS_RESOURCE is not in the
  # bounding set); the kubelet asks -998 for sandboxes, -997 for Guaranteed pods
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = '$RUNC'
        Root = '$RUN/runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
      runtime_type = 'io.containerd.runsc.v1'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc.options]
        TypeUrl = 'io.containerd.runsc.v1.options'
        ConfigPath = '$BASE/runsc.toml'
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/usr/lib/cni']
    conf_dir = '$BASE/cni/net.d'
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
EOF
# The runtimes keep their state under $RUN, not in /run/containerd/runc and
# /run/containerd/runsc: runsc pins its shared "null" gofer network
# namespace with a bind mount in its root, which outlived the cluster there;
# under $RUN, `stop` and `isobench clean` remove it with the rest.
cat >"$BASE/runsc.toml" <<EOF
root = "$RUN/runsc"
EOF
daemon containerd containerd --config "$BASE/containerd.toml"
wait_for containerd 60 ctr -a "$CTD_SOCK" version
if ! ctr -a "$CTD_SOCK" -n k8s.io images ls -q | grep -qx 'registry.k8s.io/pause:isobench'; then
  log "importing the pause image"
  ctr -a "$CTD_SOCK" -n k8s.io images import --no-unpack=false "$BIN/pause.tar" >/dev/null
fi

# ---------------------------------------------------------------- control plane
daemon kube-apiserver kube-apiserver \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
  --service-cluster-ip-range 10.96.0.0/24 \
  --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-account-issuer https://kubernetes.default.svc \
  --authorization-mode Node,RBAC --allow-privileged=true \
  --profiling=false
wait_for kube-apiserver 180 api GET /readyz
daemon kube-controller-manager kube-controller-manager \
  --kubeconfig "$BASE/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$BASE/controller-manager.kubeconfig" --authorization-kubeconfig "$BASE/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --use-service-account-credentials=false --controllers '*,-nodeipam' --profiling=false
daemon kube-scheduler kube-scheduler \
  --kubeconfig "$BASE/scheduler.kubeconfig" \
  --authentication-kubeconfig "$BASE/scheduler.kubeconfig" --authorization-kubeconfig "$BASE/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false

# ---------------------------------------------------------------- kubelet
mkdir -p "$BASE/kubelet"
cat >"$BASE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: unix://$CTD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
failSwapOn: false
oomScoreAdj: 0
localStorageCapacityIsolation: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
podLogsDir: $LOGS/pods
evictionHard:
  memory.available: "100Mi"
serializeImagePulls: false
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: Webhook
registerNode: true
maxPods: 50
EOF
kubelet_since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
running kubelet && kubelet_since=
daemon kubelet kubelet --config "$BASE/kubelet.yaml" --kubeconfig "$BASE/kubelet.kubeconfig" \
  --root-dir "$BASE/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP" --v 1
# Ready, and said so by this kubelet: after a restart etcd still holds the
# last run's Ready condition until the new kubelet's first heartbeat
node_ready() {
  local hb
  hb=$(api GET "/api/v1/nodes/$NODE" | tr -d ' \n' | sed -n 's/.*"type":"Ready","status":"True","lastHeartbeatTime":"\([^"]*\)".*/\1/p')
  [ -n "$hb" ] && { [ -z "$kubelet_since" ] || [[ "$hb" > "$kubelet_since" ]] || [ "$hb" = "$kubelet_since" ]; }
}
wait_for "node $NODE Ready" 300 node_ready

# ---------------------------------------------------------------- runtime classes
for rc in runc:runc gvisor:runsc; do
  name=${rc%%:*} handler=${rc#*:}
  if ! api GET "/apis/node.k8s.io/v1/runtimeclasses/$name" | grep -q '"handler"'; then
    api POST /apis/node.k8s.io/v1/runtimeclasses "{\"apiVersion\":\"node.k8s.io/v1\",\"kind\":\"RuntimeClass\",\"metadata\":{\"name\":\"$name\"},\"handler\":\"$handler\"}" >/dev/null
  fi
done
wait_for "service account default" 120 sh -c "curl -fsS --cacert '$PKI/ca.crt' --cert '$PKI/admin.crt' --key '$PKI/admin.key' https://127.0.0.1:$API_PORT/api/v1/namespaces/default/serviceaccounts/default"
log "node $NODE Ready; KUBECONFIG=$KUBECONFIG_ADMIN (containerd at $CTD_SOCK)"
