#!/usr/bin/env bash
# Runs every Go fuzz target in the module briefly (FUZZTIME each, default
# 5s): the seed corpora run in every `go test`; this explores beyond them.
# A crash fails the script and leaves the input under the package's
# testdata/fuzz/ for a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-5s}
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  echo "fuzz: $pkg $name ($t)"
  go test -run='^$' -fuzz="^${name}\$" -fuzztime="$t" "$pkg" >/tmp/isobench-fuzz.log 2>&1 || { cat /tmp/isobench-fuzz.log; exit 1; }
  n=$((n+1))
done < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+' internal | sed 's/func //' | sort)
echo "fuzz: $n targets, $t each, no failure"
