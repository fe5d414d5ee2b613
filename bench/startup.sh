#!/usr/bin/env bash
# bench/startup.sh: where does an instance's startup go, and how much of it
# is isobench's? For each engine with a command line of its own (docker,
# podman), it measures side by side in one run, interleaved round by round:
#   - isobench's startup workload (create -> start -> the agent's first
#     instruction -> exit, then remove; each phase on the host clock), and
#   - hyperfine on the engine's own command doing the same thing:
#     `ENGINE run --rm IMAGE /usr/local/bin/isobench agent hello` (the
#     same image isobench made, the same main process, the engine's
#     default network as isobench's default),
# and prints the phases, the totals and the ratio isobench / engine.
# A ratio near 1 says isobench adds nothing beyond what the engine costs.
#
#   bench/startup.sh                      (as root; docker podman)
#   ENGINES=docker ROUNDS=5 RUNS=10 bench/startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
engines=${ENGINES:-docker podman}
rounds=${ROUNDS:-3}
runs=${RUNS:-10}
for t in hyperfine python3 sqlite3; do command -v "$t" >/dev/null || { echo "startup.sh: $t is missing (apt-get install -y $t)" >&2; exit 1; }; done
make -s build
bin=bin/isobench
work=$(mktemp -d /tmp/isobench-startup.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "startup.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs, engines: $engines, $rounds rounds of $runs" >&2

for e in $engines; do
  db=$work/$e.db
  for r in $(seq 1 "$rounds"); do
    "$bin" run --quiet --db "$db" --html none --platform "$e" --workload startup --reps "$runs" > "$work/last.out" 2>&1 \
      || { echo "startup.sh: isobench on $e failed:" >&2; tail -3 "$work/last.out" >&2; continue 2; }
    # the image isobench used: the one its last instance ran
    img=$("$e" images --format '{{.Repository}}:{{.Tag}}' | grep -E '(^|/)isobench/minimal:' | head -1)
    [ -n "$img" ] || { echo "startup.sh: no isobench/minimal image in $e" >&2; continue 2; }
    # the engine's own command with what isobench's platform gives every
    # container that the engine's defaults lack: Podman's crun cannot set
    # this host's file limit, so isobench runs it with runc and explicit
    # ulimits (isobench doctor shows them)
    opts=""
    [ "$e" = podman ] && opts="--runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768"
    hyperfine --style none --runs "$runs" --warmup 1 --export-json "$work/$e-$r.json" \
      "$e run --rm $opts $img /usr/local/bin/isobench agent hello" > /dev/null 2>&1 \
      || { echo "startup.sh: hyperfine on $e failed" >&2; continue 2; }
  done
  sqlite3 -separator ' ' "$db" "SELECT metric, value FROM samples WHERE instance != -1 AND warmup = 0 AND metric LIKE '%_ms'" > "$work/$e.phases"
  python3 - "$e" "$work/$e.phases" "$work" "$img" <<'PY'
import glob, json, statistics, sys
e, phases, work, img = sys.argv[1:5]
v = {}
for l in open(phases):
    m, x = l.split()
    v.setdefault(m, []).append(float(x))
med = {m: statistics.median(x) for m, x in v.items()}
hf = []
for f in sorted(glob.glob(f"{work}/{e}-*.json")):
    hf += json.load(open(f))["results"][0]["times"]
print(f"\n{e} ({img}): isobench startup, median of {len(v.get('exit_ms', []))} instances")
for m in ("create_ms", "start_ms", "first_instruction_ms", "startup_ms", "exit_ms", "remove_ms"):
    if m in med:
        print(f"  {m:<22} {med[m]:8.1f} ms")
if "exit_ms" in med and hf:
    total = med["exit_ms"] + med.get("remove_ms", 0)
    ref = statistics.median(hf) * 1000
    print(f"  {'isobench total':<22} {total:8.1f} ms  (exit + remove)")
    print(f"  {'engine run --rm':<22} {ref:8.1f} ms  (hyperfine, median of {len(hf)})")
    print(f"  isobench / engine      {total / ref:8.2f}")
PY
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
