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
#   - startup on docker vs hyperfine timing
#     `docker run --rm isobench/minimal:<tag> /usr/local/bin/isobench agent hello`,
#     and isobench's own overhead: its native startup (fork/exec of the
#     agent until "hello") vs hyperfine timing the agent directly.
#
# It prints medians over the rounds and isobench/reference ratios.
#
#   bench/fidelity-net.sh [ROUNDS]     (default 3; as root, dockerd running)
#   DURATION=5 STREAMS=1 bench/fidelity-net.sh
#   STARTUP=0 bench/fidelity-net.sh    (network comparisons only)
#   PINS="split" bench/fidelity-net.sh  (pinning modes: split same none)
#   BIN=/tmp/isobench-old bench/fidelity-net.sh  (another build)
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
if [ "$smoke" = 1 ]; then rounds=1 dur=1 pins=split; fi
for m in $pins; do case $m in split|same|none) ;; *) echo "PINS: $m is not split, same or none" >&2; exit 2 ;; esac; done

need=()
for t in iperf3 sockperf hyperfine python3 sqlite3; do command -v "$t" >/dev/null || need+=("$t"); done
if ((${#need[@]})); then apt-get install -y "${need[@]}" >/dev/null; fi

work=$(mktemp -d /tmp/isobench-fidelity-net.XXXXXX)
label="isobench.fidelity=$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
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
db=$work/net.db
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
      --reps 1 --db "$db" >/dev/null
    iperf_run "$c" 127.0.0.1 "${port_lo_iperf[$m]}" "$work/iperf-lo-$m-$r.json"
    iperf_run "$c" "${ip_iperf[$m]}" 5201 "$work/iperf-br-$m-$r.json"
    sock_run "$c" 127.0.0.1 "${port_lo_sock[$m]}" "$work/sock-lo-$m-$r.txt"
    sock_run "$c" "${ip_sock[$m]}" 11111 "$work/sock-br-$m-$r.txt"
  done
  [ "$startup" = 1 ] || continue
  # startup: isobench (docker, and native for its own floor), then hyperfine
  $bin run --quiet --state-dir "$state" --platform native --platform docker --workload startup --reps 5 --db "$db" >/dev/null
  hyperfine -N --runs 5 --warmup 1 --export-json "$work/hf-docker-$r.json" \
    "docker run --rm $minimal_ref /usr/local/bin/isobench agent hello" >/dev/null 2>&1
  hyperfine -N --runs 20 --warmup 2 --export-json "$work/hf-native-$r.json" \
    "$bin agent hello" >/dev/null 2>&1
done

$bin results --db "$db" --format jsonl > "$work/samples.jsonl"
python3 - "$work" "$rounds" "$startup" "$pins" "$smoke" <<'PY'
import json, re, statistics, sys
work, rounds, startup, pins, smoke = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4].split(), sys.argv[5] == "1"
samples = [json.loads(l) for l in open(f"{work}/samples.jsonl")]
PIN = {"split": ("0", "1"), "same": ("0", "0"), "none": ("-1", "-1")}
def params(s):
    return dict(kv.split("=", 1) for kv in s["params"].split(",") if "=" in kv)
def ours(platform, workload, metric, pin=None):
    def match(s):
        if pin is None:
            return True
        p = params(s)
        return (p.get("client-cpu", "-1"), p.get("server-cpu", "-1")) == PIN[pin]
    v = [s["value"] for s in samples if s["platform"] == platform and s["workload"] == workload
         and s["instance"] == 0 and s["metric"] == metric and not s.get("warmup") and match(s)]
    return statistics.median(v) if v else None
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
def iperf(kind):
    out = []
    for r in range(1, rounds + 1):
        j = json.load(open(f"{work}/iperf-{kind}-{r}.json"))
        out.append(j["end"]["sum_received"]["bits_per_second"] / 1e9)
    return med(out)
def sock(kind):
    rate, avg, p50, p99 = [], [], [], []
    for r in range(1, rounds + 1):
        t = open(f"{work}/sock-{kind}-{r}.txt").read()
        m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=\d+; ReceivedMessages=(\d+)", t)
        rate.append(int(m.group(2)) / float(m.group(1)))
        # sockperf reports half the round trip; tcp-rr the whole of it
        avg.append(2 * float(re.search(r"avg-latency=([\d.]+)", t).group(1)))
        p50.append(2 * float(re.search(r"percentile 50\.000 =\s*([\d.]+)", t).group(1)))
        p99.append(2 * float(re.search(r"percentile 99\.000 =\s*([\d.]+)", t).group(1)))
    return med(rate), med(avg), med(p50), med(p99)
def hf(kind):
    v = []
    for r in range(1, rounds + 1):
        v += [x * 1e3 for x in json.load(open(f"{work}/hf-{kind}-{r}.json"))["results"][0]["times"]]
    return med(v)
# (comparison, where, isobench, reference, target): target is the bound on
# isobench/reference, ">=0.90" for rates, "<=1.10" for latencies.
rows = []
for pin in pins:
    for plat, kind, where in (("native", "lo", "loopback"), ("docker", "br", "docker bridge")):
        where = f"{where}, {pin}"
        k = f"{kind}-{pin}"
        rows.append(("tcp-stream Gbit/s vs iperf3", where, ours(plat, "tcp-stream", "throughput", pin), iperf(k), ">=0.90"))
        rate, avg, p50, p99 = sock(k)
        rows.append(("tcp-rr transactions/s vs sockperf", where, ours(plat, "tcp-rr", "transactions_per_sec", pin), rate, ">=0.90"))
        rows.append(("tcp-rr RTT avg us vs sockperf", where, ours(plat, "tcp-rr", "latency_avg", pin), avg, "<=1.10"))
        rows.append(("tcp-rr RTT p50 us vs sockperf", where, ours(plat, "tcp-rr", "latency_p50", pin), p50, "<=1.10"))
        rows.append(("tcp-rr RTT p99 us vs sockperf", where, ours(plat, "tcp-rr", "latency_p99", pin), p99, "<=1.10"))
d_total = hf_docker = n_hello = hf_native = None
if startup:
    d_exit, d_rm = ours("docker", "startup", "exit_ms"), ours("docker", "startup", "remove_ms")
    d_total = d_exit + d_rm if d_exit is not None and d_rm is not None else None
    hf_docker, hf_native = hf("docker"), hf("native")
    rows.append(("startup create..removed ms vs docker run --rm", "docker", d_total, hf_docker, ""))
    rows.append(("startup to hello ms (docker)", "docker", ours("docker", "startup", "startup_ms"), None, ""))
    n_hello = ours("native", "startup", "startup_ms")
    rows.append(("own overhead: native startup ms vs exec", "native", n_hello, hf_native, ""))
def verdict(ratio, target):
    if ratio is None or not target:
        return ""
    bound = float(target[2:])
    return "ok" if (ratio >= bound if target[0] == ">" else ratio <= bound) else "MISS"
print(f"medians of {rounds} round(s)")
print(f"{'comparison':46} {'where':21} {'isobench':>11} {'reference':>11} {'ratio':>7} {'target':>7}")
for label, where, a, b, target in rows:
    ratio = a / b if a and b else None
    fr = f"{ratio:.3f}" if ratio is not None else "-"
    fa = f"{a:.2f}" if a is not None else "-"
    fb = f"{b:.2f}" if b is not None else "-"
    print(f"{label:46} {where:21} {fa:>11} {fb:>11} {fr:>7} {target:>7} {verdict(ratio, target)}".rstrip())
if n_hello is not None and hf_native is not None:
    print(f"\nisobench's own startup overhead (native startup_ms - direct exec of the agent): {n_hello - hf_native:+.2f} ms")
if d_total is not None and hf_docker is not None:
    print(f"docker: isobench create..removed minus docker run --rm: {d_total - hf_docker:+.2f} ms (the CLI's own process and attach are in the reference)")
if smoke:
    # the smoke run checks the script still measures every pair, not how
    # close they are (one 1 s round on a loaded CI host says nothing)
    missing = [f"{label} ({where})" for label, where, a, b, target in rows if a is None or (target and b is None)]
    if missing:
        print("fidelity-net smoke: no number for: " + "; ".join(missing), file=sys.stderr)
        sys.exit(1)
    print("fidelity-net smoke: every comparison measured")
PY
