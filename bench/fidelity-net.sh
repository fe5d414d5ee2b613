#!/usr/bin/env bash
# bench/fidelity-net.sh: do isobench's network and startup workloads agree
# with the reference tools? In one run, interleaved round by round:
#
#   - tcp-stream vs iperf3 (same streams, duration, 128k writes, client
#     sending) and tcp-rr vs sockperf ping-pong (100-byte messages, TCP),
#     on loopback (isobench: native, server in a native instance, client on
#     the host; reference: both on 127.0.0.1) and across the docker bridge
#     (server in a container, client on the host, for both); each with
#     both ends pinned to different CPUs (split), to one CPU (same), and
#     unpinned (none) -- isobench with client-cpu/server-cpu, the tools
#     with taskset and docker --cpuset-cpus;
#   - the same two pairs from an instance to a server on the host, across
#     the isobench bridge (runc) and a QEMU tap (HOSTSRV_PLATFORMS, default
#     "runc qemu"): isobench's tcp-stream/tcp-rr with server=host,
#     client=instance against isobench's own tool:iperf3/tool:sockperf
#     (the real tools, tools image) run in an instance of the same platform
#     against iperf3/sockperf servers the script starts on the host's
#     bridge address, both clients bound with client-cpu, both servers
#     with server-cpu/taskset; the two streams each in a run of their
#     own, with the TCP bytes that reached the host's address counted
#     during it (an iptables rule without a target), so each tool's
#     Gbit/s is also checked against the link's own count ("vs link
#     bytes");
#   - startup on docker vs hyperfine timing
#     `docker run --rm isobench/minimal:<tag> /usr/local/bin/isobench agent hello`,
#     and isobench's own overhead: its native startup (fork/exec of the
#     agent until "hello") vs hyperfine timing the agent directly.
#
# Each round measures isobench and the reference back to back; the ratio
# is taken per round, and the table gives its median over the rounds with
# a 95% bootstrap interval. This host's copy rate flips between runs (one
# 3 s stream read 16 to 24 Gbit/s for either tool), so a few rounds' ratio
# can land anywhere in 0.5-1.3: a verdict is "ok" only when the interval
# lies inside 0.90-1.10, "MISS" when it lies outside, and "open" (more
# rounds) when it straddles a bound.
#
#   bench/fidelity-net.sh [ROUNDS]     (default 3; as root, dockerd running)
#   DURATION=5 STREAMS=1 bench/fidelity-net.sh
#   STARTUP=0 bench/fidelity-net.sh    (network comparisons only)
#   PINS="split" bench/fidelity-net.sh  (pinning modes: split same none)
#   BIN=/tmp/isobench-old bench/fidelity-net.sh  (another build)
#   HOSTSRV_PLATFORMS="runc" bench/fidelity-net.sh  (""): no host-server part
#   SMOKE=1 bench/fidelity-net.sh      (make test: one 1 s round, split
#                                       pins; fails when any comparison
#                                       lacks a number, never on a ratio)
#
# Its reference containers carry a label of their own (isobench.fidelity),
# not isobench's: the start-of-run sweep removes isobench-labelled objects
# of runs that are not alive, and a reference server is no run's.
#
# Only loopback and the docker bridge are used; nothing leaves the host.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
dur=${DURATION:-5}
streams=${STREAMS:-1}
startup=${STARTUP:-1}
pins=${PINS:-split same none}
smoke=${SMOKE:-0}
hostsrv=${HOSTSRV_PLATFORMS-runc qemu}
if [ "$smoke" = 1 ]; then rounds=1 dur=1 pins=split; fi
for m in $pins; do case $m in split|same|none) ;; *) echo "PINS: $m is not split, same or none" >&2; exit 2 ;; esac; done

need=()
for t in iperf3 sockperf hyperfine python3 sqlite3; do command -v "$t" >/dev/null || need+=("$t"); done
if ((${#need[@]})); then apt-get install -y "${need[@]}" >/dev/null; fi

work=$(mktemp -d /tmp/isobench-fidelity-net.XXXXXX)
label="isobench.fidelity=$$"
pids=()
counted=() # addresses with a fidelity-net-wire counting rule in INPUT
nonlocal_was=""
wire_match() { # ADDR: the counting rule's match (one spec to insert and delete)
  echo "-d $1 -p tcp -m comment --comment fidelity-net-wire"
}
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$nonlocal_was" ] && sysctl -qw net.ipv4.ip_nonlocal_bind="$nonlocal_was" || true
  for a in "${counted[@]}"; do iptables -w -D INPUT $(wire_match "$a") 2>/dev/null || true; done
  ids=$(docker ps -aq --filter "label=$label" 2>/dev/null || true)
  [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The binary: bin/isobench, with the network workloads registered.
# BIN: another isobench binary to check (an earlier build, side by side
# with this one); default: this checkout's, built now
if [ -n "${BIN:-}" ]; then bin=$BIN; else make -s build; bin=bin/isobench; fi
$bin workloads | grep '^tcp-stream ' >/dev/null || { echo "$bin has no tcp-stream workload" >&2; exit 1; }
db=$work/startup.db # the startup runs; each network run has a db of its own
state=$work/state

# Image refs for the reference servers (tools profile: host iperf3 and
# sockperf) and for hyperfine (minimal): a short agent run records them.
ref_of() { # PROFILE
  local d=$work/ref-$1.db
  $bin run --quiet --state-dir "$state" --platform docker --image "$1" --workload cpu:duration=0.1s --reps 1 --db "$d" >/dev/null
  # `results` leaves tags out; the store keeps the instance's facts in them
  sqlite3 "$d" "SELECT json_extract(tags, '\$.image') FROM samples WHERE json_extract(tags, '\$.image') IS NOT NULL LIMIT 1"
}
tools_ref=$(ref_of tools)
minimal_ref=$(ref_of minimal)
echo "images: $tools_ref $minimal_ref" >&2

container_ip() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

# Pinning modes: where the client (C) and the server (S) run. On a VM,
# waking a halted vCPU dominates a round trip, so unpinned results depend
# on where the scheduler happened to put each thread: compare like with
# like. split: C on cpu 0, S on cpu 1; same: both on cpu 0; none: no
# pinning (shown, but the two programs' regimes may differ).
pin_c() { case $1 in split|same) echo 0 ;; *) echo -1 ;; esac; }
pin_s() { case $1 in split) echo 1 ;; same) echo 0 ;; *) echo -1 ;; esac; }
on_cpu() { # CPU CMD...: run CMD on CPU, or unpinned for -1
  local c=$1; shift
  if [ "$c" -ge 0 ]; then taskset -c "$c" "$@"; else "$@"; fi
}
exec_on_cpu() { # CPU CMD...: on_cpu, replacing the calling (sub)shell
  local c=$1; shift
  if [ "$c" -ge 0 ]; then exec taskset -c "$c" "$@"; else exec "$@"; fi
}
cpuset() { [ "$1" -ge 0 ] && echo "--cpuset-cpus=$1"; true; }

# Reference servers, per pinning mode: on loopback, and in a container on
# the bridge.
declare -A ip_iperf ip_sock port_lo_iperf port_lo_sock
i=0
for m in $pins; do
  s=$(pin_s "$m")
  port_lo_iperf[$m]=$((15201 + 2 * i)); port_lo_sock[$m]=$((15202 + 2 * i)); i=$((i + 1))
  # exec: $! is then the server itself, not a subshell running the
  # function (killing that subshell left the servers running)
  (exec_on_cpu "$s" iperf3 -s -B 127.0.0.1 -p "${port_lo_iperf[$m]}" >/dev/null 2>&1) & pids+=($!)
  (exec_on_cpu "$s" sockperf sr --tcp -i 127.0.0.1 -p "${port_lo_sock[$m]}" >/dev/null 2>&1) & pids+=($!)
  c=$(docker run -d --label "$label" $(cpuset "$s") "$tools_ref" iperf3 -s -p 5201)
  ip_iperf[$m]=$(container_ip "$c")
  c=$(docker run -d --label "$label" $(cpuset "$s") "$tools_ref" sockperf sr --tcp -p 11111)
  ip_sock[$m]=$(container_ip "$c")
  case "${ip_iperf[$m]}${ip_sock[$m]}" in 172.*|10.*|192.168.*) ;; *) echo "unexpected container addresses ${ip_iperf[$m]} ${ip_sock[$m]}" >&2; exit 1 ;; esac
done

# Reference servers on the host for the instance -> host pairs, on the
# bridges' gateways (the addresses isobench's host-side server binds):
# docker0's and isobench's bridge's, which a run makes and removes, so the
# servers bind it beforehand (ip_nonlocal_bind, restored on the way out).
declare -A gw
if [ -n "$hostsrv" ]; then
  nonlocal_was=$(sysctl -n net.ipv4.ip_nonlocal_bind)
  sysctl -qw net.ipv4.ip_nonlocal_bind=1
  for p in $hostsrv; do
    case $p in
      docker) gw[$p]=$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}') ;;
      runc|crun|lxc|nspawn|qemu) gw[$p]=10.199.0.1 ;; # hostnet.DefaultPrefix's gateway
      *) echo "HOSTSRV_PLATFORMS: $p: no known bridge gateway" >&2; exit 2 ;;
    esac
  done
  i=0
  declare -A port_h_iperf port_h_sock
  for m in $pins; do
    s=$(pin_s "$m")
    for a in $(printf '%s\n' "${gw[@]}" | sort -u); do
      port_h_iperf[$m]=$((15301 + 2 * i)); port_h_sock[$m]=$((15302 + 2 * i))
      (exec_on_cpu "$s" iperf3 -s -B "$a" -p "${port_h_iperf[$m]}" >/dev/null 2>&1) & pids+=($!)
      (exec_on_cpu "$s" sockperf sr --tcp -i "$a" -p "${port_h_sock[$m]}" >/dev/null 2>&1) & pids+=($!)
    done
    i=$((i + 1))
  done
  # a rule without a target in INPUT counts the TCP bytes that reach the
  # host's address on the link (isobench's bridge comes and goes with its
  # runs, so its own counters cannot be read around one)
  for a in $(printf '%s\n' "${gw[@]}" | sort -u); do
    iptables -w -I INPUT $(wire_match "$a")
    counted+=("$a")
  done
fi
wire_bytes() { # ADDR: the bytes counted so far for TCP to ADDR
  iptables -w -nvxL INPUT | awk -v a="$1" '/fidelity-net-wire/ { for (i = 3; i <= NF; i++) if ($i == a) { print $2; exit } }'
}
sleep 1

iperf_run() { # CPU ADDR PORT OUT
  on_cpu "$1" iperf3 -c "$2" -p "$3" -P "$streams" -t "$dur" -l 128K -J > "$4"
}
sock_run() { # CPU ADDR PORT OUT
  on_cpu "$1" sockperf pp --tcp -i "$2" -p "$3" -m 100 -t "$dur" > "$4" 2>&1
}

for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  for m in $pins; do
    c=$(pin_c "$m"); s=$(pin_s "$m")
    pin="client-cpu=$c,server-cpu=$s"
    $bin run --quiet --state-dir "$state" --platform native --platform docker \
      --workload "tcp-stream:duration=${dur}s,streams=$streams,$pin" --workload "tcp-rr:duration=${dur}s,streams=1,$pin" \
      --reps 1 --db "$work/net-$m-$r.db" >/dev/null
    $bin results --db "$work/net-$m-$r.db" --format jsonl > "$work/net-$m-$r.jsonl"
    iperf_run "$c" 127.0.0.1 "${port_lo_iperf[$m]}" "$work/iperf-lo-$m-$r.json"
    iperf_run "$c" "${ip_iperf[$m]}" 5201 "$work/iperf-br-$m-$r.json"
    sock_run "$c" 127.0.0.1 "${port_lo_sock[$m]}" "$work/sock-lo-$m-$r.txt"
    sock_run "$c" "${ip_sock[$m]}" 11111 "$work/sock-br-$m-$r.txt"
    # instance -> host: isobench's ends and the real tools, each platform
    # in runs of its own (one bridge gateway per run), tools image; the
    # two streams each alone in a run, with the TCP bytes that reached the
    # host's address counted around it (the iptables rule): the link's
    # count, against which both tools' are checked
    for p in $hostsrv; do
      : > "$work/host-$p-$m-$r.jsonl"
      for part in stream iperf rr; do
        case $part in
          stream) wl=(--workload "tcp-stream:server=host,client=instance,duration=${dur}s,streams=$streams,$pin") ;;
          iperf) wl=(--workload "tool:iperf3:server=${gw[$p]},port=${port_h_iperf[$m]},parallel=$streams,duration=${dur}s,client-cpu=$c") ;;
          rr) wl=(--workload "tcp-rr:server=host,client=instance,duration=${dur}s,streams=1,$pin"
                  --workload "tool:sockperf:server=${gw[$p]},port=${port_h_sock[$m]},msg-size=100,duration=${dur}s,client-cpu=$c") ;;
        esac
        b0=$(wire_bytes "${gw[$p]}")
        $bin run --quiet --state-dir "$state" --platform "$p" --image tools "${wl[@]}" \
          --reps 1 --db "$work/host-$p-$m-$r-$part.db" >/dev/null || echo "round $r: $p: a cell failed (its number is missing)" >&2
        echo $(( $(wire_bytes "${gw[$p]}") - b0 )) > "$work/wire-$p-$m-$r-$part"
        $bin results --db "$work/host-$p-$m-$r-$part.db" --format jsonl >> "$work/host-$p-$m-$r.jsonl" 2>/dev/null || true
      done
    done
  done
  [ "$startup" = 1 ] || continue
  # startup: isobench (docker, and native for its own floor), then hyperfine
  $bin run --quiet --state-dir "$state" --platform native --platform docker --workload startup --reps 5 --db "$db" >/dev/null
  hyperfine -N --runs 5 --warmup 1 --export-json "$work/hf-docker-$r.json" \
    "docker run --rm $minimal_ref /usr/local/bin/isobench agent hello" >/dev/null 2>&1
  hyperfine -N --runs 20 --warmup 2 --export-json "$work/hf-native-$r.json" \
    "$bin agent hello" >/dev/null 2>&1
done

[ "$startup" = 1 ] && $bin results --db "$db" --format jsonl > "$work/samples.jsonl" # load() reads a missing file as empty
python3 - "$work" "$rounds" "$startup" "$pins" "$smoke" "$hostsrv" "$dur" <<'PY'
import json, os, random, re, statistics, sys
work, rounds, startup, pins, smoke = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4].split(), sys.argv[5] == "1"
hostsrv, dur = sys.argv[6].split(), float(sys.argv[7])
R = range(1, rounds + 1)
def load(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []
def value(ss, platform, workload, metric):
    """the median over ss of metric (instance 0, not a warmup), or None"""
    v = [s["value"] for s in ss if s["platform"] == platform and s["workload"] == workload
         and s["instance"] == 0 and s["metric"] == metric and not s.get("warmup")]
    return statistics.median(v) if v else None
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
def iperf(kind, r):
    try:
        j = json.load(open(f"{work}/iperf-{kind}-{r}.json"))
        return j["end"]["sum_received"]["bits_per_second"] / 1e9
    except (OSError, ValueError, KeyError):
        return None
def wire(name):
    """the TCP bytes that reached the host's address during one run, as Gbit/s over the stream's duration"""
    try:
        return int(open(f"{work}/wire-{name}").read()) * 8 / dur / 1e9
    except (OSError, ValueError):
        return None
def sock(kind, r):
    """sockperf's rate, RTT avg, p50, p99 in round r (None each when lost)"""
    try:
        t = open(f"{work}/sock-{kind}-{r}.txt").read()
        m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=\d+; ReceivedMessages=(\d+)", t)
        # sockperf reports half the round trip; tcp-rr the whole of it
        return (int(m.group(2)) / float(m.group(1)), 2 * float(re.search(r"avg-latency=([\d.]+)", t).group(1)),
                2 * float(re.search(r"percentile 50\.000 =\s*([\d.]+)", t).group(1)),
                2 * float(re.search(r"percentile 99\.000 =\s*([\d.]+)", t).group(1)))
    except (OSError, AttributeError):
        return (None,) * 4

# Network rows: (comparison, where, isobench per round, reference per
# round), one value (or None) per round; the two were measured back to
# back, so the ratio is taken round by round.
RR = (("transactions/s", "transactions_per_sec", "round_trips_per_sec"), ("RTT avg us", "latency_avg", "rtt_avg"),
      ("RTT p50 us", "latency_p50", "rtt_p50"), ("RTT p99 us", "latency_p99", "rtt_p99"))
net = []
for pin in pins:
    runs = [load(f"{work}/net-{pin}-{r}.jsonl") for r in R]
    for plat, kind, where in (("native", "lo", "loopback"), ("docker", "br", "docker bridge")):
        socks = [sock(f"{kind}-{pin}", r) for r in R]
        where = f"{where}, {pin}"
        net.append(("tcp-stream Gbit/s vs iperf3", where, [value(ss, plat, "tcp-stream", "throughput") for ss in runs],
                    [iperf(f"{kind}-{pin}", r) for r in R]))
        for i, (name, ours_m, _) in enumerate(RR):
            net.append((f"tcp-rr {name} vs sockperf", where, [value(ss, plat, "tcp-rr", ours_m) for ss in runs], [x[i] for x in socks]))
    for plat in hostsrv:
        runs = [load(f"{work}/host-{plat}-{pin}-{r}.jsonl") for r in R]
        where = f"{plat} -> host, {pin}"
        net.append(("tcp-stream Gbit/s vs iperf3", where, [value(ss, plat, "tcp-stream", "throughput") for ss in runs],
                    [value(ss, plat, "tool:iperf3", "received_gbit_per_sec") for ss in runs]))
        for name, ours_m, ref_m in RR:
            net.append((f"tcp-rr {name} vs sockperf", where, [value(ss, plat, "tcp-rr", ours_m) for ss in runs],
                        [value(ss, plat, "tool:sockperf", ref_m) for ss in runs]))
        # each stream's Gbit/s against the bytes the link carried during
        # its run, as Gbit/s over the stream's duration (headers and the
        # instance's own traffic make the link's count slightly larger)
        for part, label, wl, m in (("stream", "tcp-stream", "tcp-stream", "throughput"),
                                   ("iperf", "iperf3", "tool:iperf3", "received_gbit_per_sec")):
            net.append((f"{label} Gbit/s vs link bytes", where, [value(ss, plat, wl, m) for ss in runs],
                        [wire(f"{plat}-{pin}-{r}-{part}") for r in R]))

BAND = (0.90, 1.10)
def ratio_stats(a, b):
    """median of the per-round ratios, its 95% bootstrap interval, how many"""
    rs = [x / y for x, y in zip(a, b) if x and y]
    if not rs:
        return None, None, None, 0
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(rs, k=len(rs))) for _ in range(2000))
    return statistics.median(rs), meds[49], meds[1949], len(rs)
def agreement(lo, hi, n):
    if lo is None or n < 3:
        return ""
    if BAND[0] <= lo and hi <= BAND[1]:
        return "ok"
    if hi < BAND[0] or lo > BAND[1]:
        return "MISS"
    return "open"

print(f"{rounds} round(s). isobench, reference: medians; ratio: the median of the rounds' isobench/reference, with its 95% bootstrap interval;")
print(f"agreement: ok when the interval lies inside {BAND[0]:.2f}-{BAND[1]:.2f}, MISS when outside, open when it straddles a bound (3+ rounds)")
print(f"{'comparison':36} {'where':22} {'isobench':>10} {'reference':>10} {'ratio':>6} {'interval':>15}")
fmt = lambda x: "-" if x is None else f"{x:.2f}"
for label, where, a, b in net:
    ratio, lo, hi, n = ratio_stats(a, b)
    fi = f"[{lo:.3f}, {hi:.3f}]" if ratio is not None and n > 1 else ""
    print(f"{label:36} {where:22} {fmt(med(a)):>10} {fmt(med(b)):>10} {'-' if ratio is None else f'{ratio:.3f}':>6} {fi:>15} {agreement(lo, hi, n)}".rstrip())

# startup: pooled medians over every round (startup.sh has the phases)
samples = load(f"{work}/samples.jsonl")
rows = []
if startup:
    def hf(kind):
        v = []
        for r in R:
            v += [x * 1e3 for x in json.load(open(f"{work}/hf-{kind}-{r}.json"))["results"][0]["times"]]
        return med(v)
    d_exit, d_rm = value(samples, "docker", "startup", "exit_ms"), value(samples, "docker", "startup", "remove_ms")
    d_total = d_exit + d_rm if d_exit is not None and d_rm is not None else None
    hf_docker, hf_native = hf("docker"), hf("native")
    n_hello = value(samples, "native", "startup", "startup_ms")
    rows = [("create..removed ms vs docker run --rm", "docker", d_total, hf_docker),
            ("to hello ms (docker)", "docker", value(samples, "docker", "startup", "startup_ms"), None),
            ("own overhead: native startup ms vs exec", "native", n_hello, hf_native)]
    print(f"\n{'startup':46} {'where':8} {'isobench':>9} {'reference':>9} {'ratio':>6}")
    for label, where, a, b in rows:
        ratio = a / b if a and b else None
        print(f"{label:46} {where:8} {fmt(a):>9} {fmt(b):>9} {'-' if ratio is None else f'{ratio:.3f}':>6}")
    if n_hello is not None and hf_native is not None:
        print(f"\nisobench's own startup overhead (native startup_ms - direct exec of the agent): {n_hello - hf_native:+.2f} ms")
    if d_total is not None and hf_docker is not None:
        print(f"docker: isobench create..removed minus docker run --rm: {d_total - hf_docker:+.2f} ms (the CLI's own process and attach are in the reference)")
if smoke:
    # the smoke run checks the script still measures every pair, not how
    # close they are (one 1 s round on a loaded CI host says nothing)
    missing = [f"{label} ({where})" for label, where, a, b in net if med(a) is None or med(b) is None]
    missing += [f"startup {label} ({where})" for label, where, a, b in rows if a is None or (b is None and "hello ms" not in label)]
    if missing:
        print("fidelity-net smoke: no number for: " + "; ".join(missing), file=sys.stderr)
        sys.exit(1)
    print("fidelity-net smoke: every comparison measured")
PY
