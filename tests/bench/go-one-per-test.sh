#!/usr/bin/env bash
# Benchmark: what running each mapped Go test in its own `go test` process costs (docs/decisions.md,
# "Honest verdicts"), beside the peer run of the same tests in one `go test -run '^(…)$'` process. The
# gate does the former on every Go version: a framing Go (1.20+) still takes a line a test prints with
# test2json's marker as another test's pass, so one process per test is what keeps such lines strangers.
#
#   tests/bench/go-one-per-test.sh [TESTS]      (default 8: an evidence map names a handful)
#
# Needs go (GO=PATH for another one). The package and its build cache are made under a temp dir and warmed
# first, as the gate's cache is after its first run; each of 5 rounds times both ways, and the medians and
# their ratio are printed last.
set -euo pipefail

n=${1:-8}
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/m/calc"
printf 'module example.com/m\n\ngo 1.19\n' >"$work/m/go.mod"
printf 'package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n' >"$work/m/calc/calc.go"
{
  printf 'package calc\n\nimport "testing"\n'
  for i in $(seq 1 "$n"); do
    printf '\nfunc TestAdd%d(t *testing.T) {\n\tif Add(%d, 1) != %d {\n\t\tt.Fatal("no")\n\t}\n}\n' "$i" "$i" $((i + 1))
  done
} >"$work/m/calc/calc_test.go"
export GOCACHE=$work/cache GOPATH=$work/path GOFLAGS=-mod=mod GOTOOLCHAIN=local
cd "$work/m"
names=$(seq -f 'TestAdd%g' 1 "$n" | paste -sd'|')
"$go" test -json -count=1 -vet=off -run "^($names)\$" ./calc >/dev/null

now() { date +%s%N; }
one=() each=()
for _ in 1 2 3 4 5; do
  t0=$(now)
  "$go" test -json -count=1 -vet=off -run "^($names)\$" ./calc >/dev/null
  t1=$(now)
  for i in $(seq 1 "$n"); do
    "$go" test -json -count=1 -vet=off -run "^TestAdd$i\$" ./calc >/dev/null
  done
  t2=$(now)
  one+=($(((t1 - t0) / 1000000)))
  each+=($(((t2 - t1) / 1000000)))
done
median() { printf '%s\n' "$@" | sort -n | sed -n 3p; }
m1=$(median "${one[@]}")
m2=$(median "${each[@]}")
echo "$("$go" version), $n tests, median of 5 (warm cache):"
echo "  one go test process:        ${m1} ms"
echo "  one go test process a test: ${m2} ms"
awk -v a="$m2" -v b="$m1" -v n="$n" 'BEGIN { printf "  ratio: %.1fx (%.0f ms more a test)\n", a / b, (a - b) / n }'
