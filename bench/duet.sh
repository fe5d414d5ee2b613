#!/usr/bin/env bash
# bench/duet.sh: do duet runs (--duet) give tighter intervals than
# interleaved runs on a noisy host? Issue 29 asks for the A/A interval
# width and the quota-0.5 interval under an injected noisy neighbour, duet
# vs interleaved, the same number of repetitions, side by side.
#
# The neighbour is a CPU hog started by this script: one busy thread per
# CPU, on for 0.3-1.5 s, off for 0.3-1.5 s (random), all CPUs at once -
# noise that hits whatever runs at that moment, like a cloud neighbour's
# bursts. Interleaved runs meet it in one platform's repetition and not the
# other's; a duet's two halves meet it together.
#
# For each platform and case (A/A: PLATFORM vs PLATFORM:cpus=NCPU, an
# unbinding limit; quota: PLATFORM vs PLATFORM:cpus=0.5) it runs the cpu
# workload (1 thread, 2 s) REPS times interleaved and REPS times as a duet,
# and prints the ratio, its 95% interval and the interval's width, and the
# width ratio interleaved / duet (> 1: the duet is tighter).
#
#   bench/duet.sh                    (as root; native and docker, REPS=10)
#   PLATFORMS=runc REPS=20 bench/duet.sh
#   NOISE=0 bench/duet.sh            (no neighbour: the quiet-host widths)
set -euo pipefail
cd "$(dirname "$0")/.."
platforms=${PLATFORMS:-native docker}
reps=${REPS:-10}
noise=${NOISE:-1}
for t in python3; do command -v "$t" >/dev/null || { echo "duet.sh: $t is missing" >&2; exit 1; }; done
make -s build
bin=bin/isobench
work=$(mktemp -d /tmp/isobench-duet.XXXXXX)
hog=
cleanup() {
  [ -n "$hog" ] && kill -- "-$hog" 2>/dev/null || true
  [ -n "${KEEP:-}" ] && echo "kept $work" >&2 && return; rm -rf "$work"
}
trap cleanup EXIT
ncpu=$(nproc)
echo "duet.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg) on $ncpu CPUs, platforms: $platforms, $reps repetitions, noise=$noise" >&2

if [ "$noise" = 1 ]; then
  # the neighbour, in a process group of its own (killed at exit)
  setsid bash -c '
    n=$1
    while :; do
      on=$(( (RANDOM % 13 + 3) * 100 )); off=$(( (RANDOM % 13 + 3) * 100 ))
      for i in $(seq 1 "$n"); do timeout "$(printf "%d.%03d" $((on/1000)) $((on%1000)))" sh -c "while :; do :; done" & done
      wait
      sleep "$(printf "%d.%03d" $((off/1000)) $((off%1000)))"
    done' hog "$ncpu" &
  hog=$!
  sleep 1
fi

rows=$work/rows.tsv
: > "$rows"
for p in $platforms; do
  for case in a-a quota; do
    other="$p:cpus=$ncpu"; [ $case = quota ] && other="$p:cpus=0.5"
    for mode in interleaved duet; do
      db=$work/$p-$case-$mode.db
      extra=(); [ $mode = duet ] && extra=(--duet)
      "$bin" run --quiet --db "$db" --html none --platform "$p" --platform "$other" --baseline "$p" \
        --workload cpu:threads=1,duration=2s --reps "$reps" "${extra[@]}" > "$work/last.out" 2>&1 || { echo "duet.sh: $p $case $mode failed:" >&2; tail -3 "$work/last.out" >&2; }
      "$bin" report --db "$db" --format jsonl 2>/dev/null | python3 -c '
import json, sys
p, case, mode, out = sys.argv[1:5]
for l in sys.stdin:
    c = json.loads(l)
    if c["metric"] != "events_per_sec" or not c.get("options") or not c.get("ratio_valid"):
        continue
    lo, hi, n, r = c["ratio_ci_low"], c["ratio_ci_high"], c["n"], c["ratio"]
    with open(out, "a") as f:
        f.write(f"{p}\t{case}\t{mode}\t{n}\t{r:.3f}\t{lo:.3f}\t{hi:.3f}\t{hi-lo:.3f}\n")
' "$p" "$case" "$mode" "$rows" || true
    done
  done
done
[ -n "$hog" ] && { kill -- "-$hog" 2>/dev/null || true; hog=; }

echo
python3 - "$rows" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{'platform':<9} {'case':<6} {'mode':<12} {'n':>3} {'ratio':>7} {'95% CI':<17} {'width':>7}")
w = {}
for p, case, mode, n, r, lo, hi, width in rows:
    print(f"{p:<9} {case:<6} {mode:<12} {n:>3} {r:>7} [{lo}, {hi}] {width:>7}")
    w[(p, case, mode)] = float(width)
print()
for (p, case, mode), x in w.items():
    if mode == "interleaved" and (p, case, "duet") in w:
        d = w[(p, case, "duet")]
        print(f"{p} {case}: interval width interleaved / duet = {x / d:.2f}" if d > 0 else f"{p} {case}: duet width 0")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
