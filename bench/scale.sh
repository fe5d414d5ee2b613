#!/usr/bin/env bash
# bench/scale.sh: isobench's own behaviour at scale (issue 20), as tables.
#
#   bench/scale.sh [barrier] [cost] [startup] [density] [store]   (default: all; as root)
#
#   barrier  32 instances per platform, SKEW_REPS repetitions of a short cpu
#            workload with each barrier (the clock deadline, the default,
#            and the stdin "go" line, ISOBENCH_BARRIER=stdin): the skew
#            between the first and the last instance starting its workload
#            (barrier_skew_ms, from the start clocks the agents report) as
#            p50/p99/max over the repetitions. Target: p99 <= 1 ms on the
#            container platforms.
#   cost     COST_REPS repetitions of a 10 s cpu workload, one instance, per
#            platform: the share of the run's wall time spent in the
#            workload, per repetition (create, agent copy, barrier, result,
#            removal are the rest) and for the whole command (plus process
#            start, image check, store, report). Target >= 99%.
#   startup  isobench's startup (create..removed) against hyperfine timing
#            the same engine command (docker/podman run --rm IMAGE agent
#            hello; native: exec of the agent). Target: within 1 ms.
#   density  density to DENSITY_MAX instances (500) or the platform's limit,
#            with the reason it stopped, memory per instance, startup
#            latency against count and isobench's own RSS/CPU.
#   store    go run ./bench/store: samples/s the store accepts.
#
# PLATFORMS (default "native docker podman lxc runc crun") chooses the
# platforms. The load average is printed with every table: numbers taken on
# a busy machine are the machine's, not isobench's.
set -euo pipefail
cd "$(dirname "$0")/.."
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(barrier cost startup density store)
platforms=${PLATFORMS:-native docker podman lxc runc crun}
skew_reps=${SKEW_REPS:-30}
cost_reps=${COST_REPS:-3}
density_max=${DENSITY_MAX:-500}
make -s build
bin=bin/isobench
work=$(mktemp -d /tmp/isobench-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
want() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
pargs=()
for p in $platforms; do pargs+=(--platform "$p"); done

if want barrier; then
  echo "== barrier skew: 32 instances, $skew_reps repetitions per platform and barrier (load at start: $(load))"
  for b in deadline stdin; do
    ISOBENCH_BARRIER=$b $bin run --quiet --html none "${pargs[@]}" --workload cpu:duration=300ms,max-prime=2000 \
      --instances 32 --reps "$skew_reps" --db "$work/skew-$b.db" >/dev/null 2>"$work/skew-$b.err" || true
    $bin results --db "$work/skew-$b.db" --format jsonl > "$work/skew-$b.jsonl" 2>/dev/null || : > "$work/skew-$b.jsonl"
  done
  python3 - "$work" "$platforms" <<'PY'
import json, math, sys
work, platforms = sys.argv[1], sys.argv[2].split()
def q(v, p):  # nearest rank
    v = sorted(v)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]
print(f"{'platform':10} {'barrier':9} {'reps':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
for plat in platforms:
    for b in ("deadline", "stdin"):
        v = [s["value"] for l in open(f"{work}/skew-{b}.jsonl") for s in [json.loads(l)]
             if s["platform"] == plat and s["metric"] == "barrier_skew_ms" and not s.get("warmup")]
        if not v:
            print(f"{plat:10} {b:9} {0:>5}   (no repetition: see the run's failures)")
            continue
        print(f"{plat:10} {b:9} {len(v):>5} {q(v, 50):>9.3f} {q(v, 99):>9.3f} {max(v):>9.3f}")
PY
  for b in deadline stdin; do
    $bin report --db "$work/skew-$b.db" 2>/dev/null | grep -iE "fail|error" | head -5 | sed "s/^/  [$b] /" || true
  done
  echo "load at end: $(load)"
fi

if want cost; then
  echo "== harness cost: cpu duration=10s, 1 instance, $cost_reps repetitions per platform (load at start: $(load))"
  : > "$work/cost-wall.txt"
  for p in $platforms; do
    # untimed: image preparation and first-use caches
    $bin run --quiet --html none --platform "$p" --workload cpu:duration=1s --reps 1 --db "$work/cost-warm.db" >/dev/null 2>&1 || true
    t0=$(date +%s.%N)
    $bin run --quiet --html none --platform "$p" --workload cpu:duration=10s --reps "$cost_reps" --db "$work/cost-$p.db" >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    echo "$p $t0 $t1" >> "$work/cost-wall.txt"
    $bin results --db "$work/cost-$p.db" --format jsonl > "$work/cost-$p.jsonl" 2>/dev/null || : > "$work/cost-$p.jsonl"
  done
  python3 - "$work" <<'PY'
import sqlite3, statistics, sys
from datetime import datetime
work = sys.argv[1]
def ts(s):
    s = s.replace("Z", "+00:00")
    if "." in s:  # Python < 3.11 wants at most 6 fraction digits
        head, frac = s.split(".", 1)
        digits = "".join(c for c in frac if c.isdigit())
        s = head + "." + digits[:6] + frac[len(digits):]
    return datetime.fromisoformat(s).timestamp()
print(f"{'platform':10} {'reps':>4} {'rep s':>8} {'in workload/rep':>16} {'between reps s':>15} {'run wall s':>11} {'in workload/run':>16}")
for line in open(f"{work}/cost-wall.txt"):
    plat, t0, t1 = line.split()
    wall = float(t1) - float(t0)
    reps = {}
    try:  # `results` leaves the times out; the store has them
        rows = sqlite3.connect(f"{work}/cost-{plat}.db").execute(
            "SELECT rep, start, duration_ns FROM samples WHERE workload = 'cpu' AND metric = 'events_per_sec' AND instance = 0 AND warmup = 0").fetchall()
    except sqlite3.Error:
        rows = []
    for rep, start, dur in rows:
        reps[rep] = (ts(start), dur / 1e9)
    if not reps:
        print(f"{plat:10} {0:>4}   (no repetition: see the run's failures)")
        continue
    order = sorted(reps.values())
    rep_s = statistics.median(d for _, d in order)
    gaps = [order[i + 1][0] - (order[i][0] + order[i][1]) for i in range(len(order) - 1)]
    gap = statistics.median(gaps) if gaps else 0.0
    print(f"{plat:10} {len(order):>4} {rep_s:>8.3f} {10 / rep_s:>16.4f} {gap:>15.3f} {wall:>11.3f} {10 * len(order) / wall:>16.4f}")
PY
  echo "load at end: $(load)"
fi

if want startup; then
  echo "== startup: isobench vs hyperfine on the same engine command (load at start: $(load))"
  if ! command -v hyperfine >/dev/null; then
    echo "hyperfine is not installed (apt-get install -y hyperfine): skipped"
  else
    sp=()
    for p in native docker podman; do case " $platforms " in *" $p "*) sp+=(--platform "$p");; esac; done
    $bin run --quiet --html none "${sp[@]}" --workload startup --reps 10 --db "$work/startup.db" >/dev/null 2>&1 || true
    $bin results --db "$work/startup.db" --format jsonl > "$work/startup.jsonl" 2>/dev/null || : > "$work/startup.jsonl"
    : > "$work/hf.txt"
    hyperfine -N --runs 20 --warmup 2 --export-json "$work/hf-native.json" "$PWD/$bin agent hello" >/dev/null 2>&1 && echo native >> "$work/hf.txt"
    for eng in docker podman; do
      case " $platforms " in *" $eng "*) ;; *) continue;; esac
      # the image isobench's instances use: an in-guest run records it in its tags
      $bin run --quiet --html none --platform "$eng" --workload cpu:duration=0.1s --reps 1 --db "$work/ref-$eng.db" >/dev/null 2>&1 || true
      img=$(python3 -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT json_extract(tags, ?) FROM samples WHERE platform = ? AND json_extract(tags, ?) IS NOT NULL LIMIT 1", ("$.image", sys.argv[2], "$.image")).fetchone()
print(r[0] if r else "")' "$work/ref-$eng.db" "$eng" 2>/dev/null || true)
      [ -n "$img" ] || { echo "$eng: no image recorded by an in-guest run"; continue; }
      agent=/usr/local/bin/isobench
      hyperfine -N --runs 10 --warmup 1 --export-json "$work/hf-$eng.json" "$eng run --rm $img $agent agent hello" >/dev/null 2>&1 && echo "$eng" >> "$work/hf.txt"
    done
    python3 - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
samples = [json.loads(l) for l in open(f"{work}/startup.jsonl")]
def ours(plat, metric):
    v = [s["value"] for s in samples if s["platform"] == plat and s["workload"] == "startup" and s["metric"] == metric
         and s["instance"] == 0 and not s.get("warmup")]
    return statistics.median(v) if v else None
print(f"{'platform':10} {'isobench ms':>12} {'hyperfine ms':>13} {'diff ms':>9}   (isobench: create..removed = exit_ms + remove_ms; native: startup_ms)")
for plat in [l.strip() for l in open(f"{work}/hf.txt") if l.strip()]:
    ref = statistics.median(x * 1e3 for x in json.load(open(f"{work}/hf-{plat}.json"))["results"][0]["times"])
    if plat == "native":
        a = ours(plat, "startup_ms")
    else:
        e, r = ours(plat, "exit_ms"), ours(plat, "remove_ms")
        a = e + r if e is not None and r is not None else None
    print(f"{plat:10} {a if a is not None else float('nan'):>12.2f} {ref:>13.2f} {(a - ref) if a is not None else float('nan'):>+9.2f}")
PY
  fi
  echo "load at end: $(load)"
fi

if want density; then
  echo "== density to $density_max instances (load at start: $(load))"
  for p in $platforms; do
    $bin run --quiet --html none --platform "$p" --workload "density:max-instances=$density_max,startup-ceiling=10s,memory-limit=2g" \
      --reps 1 --db "$work/density-$p.db" >/dev/null 2>"$work/density-$p.err" || true
    $bin results --db "$work/density-$p.db" --format jsonl > "$work/density-$p.jsonl" 2>/dev/null || : > "$work/density-$p.jsonl"
    echo "  $p done (load $(load))" >&2
  done
  python3 - "$work" "$platforms" <<'PY'
import json, sqlite3, sys
work, platforms = sys.argv[1], sys.argv[2].split()
print(f"{'platform':10} {'reached':>7} {'stop':16} {'startup ms @1':>13} {'@10':>8} {'@50':>8} {'@100':>8} {'@250':>8} {'@last':>8} {'MiB/inst':>9} {'host MiB/inst':>13} {'isobench RSS MiB':>16} {'isobench CPU s':>14}")
for plat in platforms:
    by = {}
    tags = {}
    try:  # `results` leaves the tags (stop reason) out; the store has them
        rows = sqlite3.connect(f"{work}/density-{plat}.db").execute(
            "SELECT instance, metric, value, tags FROM samples WHERE workload = 'density' AND instance >= 0").fetchall()
    except sqlite3.Error:
        rows = []
    for instance, metric, value, tj in rows:
        by.setdefault(instance + 1, {})[metric] = value
        tags = json.loads(tj or "{}") or tags
    if not by:
        err = open(f"{work}/density-{plat}.err").read().strip().splitlines()
        print(f"{plat:10} {0:>7} failed: {err[-1] if err else 'no samples'}")
        continue
    last = max(by)
    def st(k):
        return f"{by[k]['startup_ms']:.1f}" if k in by else "-"
    m = by[last]
    inst = m.get("instances_memory_bytes")
    per = f"{inst / last / 2**20:.1f}" if inst else "-"
    host = f"{m.get('host_memory_growth_bytes', 0) / last / 2**20:.1f}"
    rss = f"{m['isobench_rss_bytes'] / 2**20:.0f}" if "isobench_rss_bytes" in m else "-"
    cpu = f"{m['isobench_cpu_seconds']:.1f}" if "isobench_cpu_seconds" in m else "-"
    stop = tags.get("stop", "?")
    print(f"{plat:10} {last:>7} {stop:16} {st(1):>13} {st(10):>8} {st(50):>8} {st(100):>8} {st(250):>8} {st(last):>8} {per:>9} {host:>13} {rss:>16} {cpu:>14}")
    if tags.get("stop_error"):
        print(f"{'':10} stop error: {tags['stop_error'][:200]}")
    if tags.get("footprint_error"):
        print(f"{'':10} no per-instance memory: {tags['footprint_error'][:200]}")
PY
  echo "load at end: $(load)"
fi

if want store; then
  echo "== store: samples/s with durability on (WAL, synchronous=NORMAL), 32 instances (load at start: $(load))"
  go run ./bench/store -instances 32 -metrics 4,16,64 -reps 200 -dir "$work"
  echo "load at end: $(load)"
fi
