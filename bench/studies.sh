#!/usr/bin/env bash
# bench/studies.sh: every built-in study at quick scale, one after another,
# each into its own store and HTML report, then a line per study with how
# long it took and how its comparisons with the paper came out
# (AGREES / DISAGREES / UNDECIDED, printed by 'isobench study run').
#
#   bench/studies.sh [OUTDIR] [STUDY...]   (as root, after `make build`;
#                                          default OUTDIR out/studies, every
#                                          built-in study)
#
# Quick scale keeps every cell of a study but shrinks durations and
# repetitions; the reports say so. On a 2-core host each study takes
# minutes to a quarter of an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/studies}
shift || true
studies=("$@")
make -s build
[ ${#studies[@]} -gt 0 ] || mapfile -t studies < <(bin/isobench study list | cut -d' ' -f1)
mkdir -p "$out"
bin=bin/isobench
printf '%-6s %-9s %-8s %-8s %-10s %s\n' study took agrees disagree undecided report > "$out/summary.txt"
for s in "${studies[@]}"; do
  log=$out/study-$s.log
  start=$(date +%s)
  status=ok
  "$bin" study run "$s" --scale quick --db "$out/study-$s.db" -o "$out/study-$s.html" >"$log" 2>&1 || status="exit $?"
  took=$(( $(date +%s) - start ))
  # "N comparisons agree with the paper, N disagree, N undecided (...)"
  read -r a d u < <(sed -nE 's/^([0-9]+) comparisons agree with the paper, ([0-9]+) disagree, ([0-9]+) undecided.*/\1 \2 \3/p' "$log" | tail -1; echo "- - -") || true
  printf '%-6s %-9s %-8s %-8s %-10s %s (%s)\n' "$s" "${took}s" "$a" "$d" "$u" "$out/study-$s.html" "$status" >> "$out/summary.txt"
done
cat "$out/summary.txt"
