#!/usr/bin/env bash
# Runs every Go fuzz target in the module briefly (FUZZTIME each, default
# 20000x: twenty thousand inputs): the seed corpora run in every `go test`;
# this explores beyond them. A crash fails the script and leaves the input
# under the package's testdata/fuzz/ for a regression test.
#
# The default budget is a count, not a duration: with a duration, Go 1.26's
# fuzz coordinator can report a bare "context deadline exceeded" failure
# when the time runs out while a worker is busy (go.dev/issue/75804, fixed
# in Go 1.27), with no failing input; `make test` hit it once on this
# loaded 2-core host (FuzzCompareWarnings). A count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-20000x}
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "fuzz: $pkg $name ($t)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$t" "$pkg" >/tmp/isobench-fuzz.log 2>&1 || { cat /tmp/isobench-fuzz.log; exit 1; }
  n=$((n+1))
done < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+' internal | sed 's/func //' | sort)
echo "fuzz: $n targets, $t each, no failure"
