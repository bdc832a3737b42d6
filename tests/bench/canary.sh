#!/usr/bin/env bash
# Benchmark: what the canary run (docs/proof-packs.md, "The canary") adds to the tests floor for a Go
# package, beside the peer run of the tests floor alone. The tests floor runs each mapped test in its own
# `go test` process; the canary, as built, exports the head's tree into a copy (git archive, as the gate
# exports it from git's objects), inserts `t.Fatal("aayu canary …")` after each test's `func` line, and
# runs each test again the same way. The third line times the canary as one `go test` of all of a
# package's canaries (not built), for comparison.
#
#   tests/bench/canary.sh [TESTS]      (default 8)
#
# Needs go and git (GO=PATH for another Go). Everything is made under a temp dir, the build cache warmed
# first (the copy shares it, as the gate's does); each of 5 rounds times each way; medians and ratios last.
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
git -C "$work/m" init -q
git -C "$work/m" add -A
git -C "$work/m" -c user.name=b -c user.email=b@example.com commit -qm bench
export GOCACHE=$work/cache GOPATH=$work/path GOFLAGS=-mod=mod GOTOOLCHAIN=local
names=$(seq -f 'TestAdd%g' 1 "$n" | paste -sd'|')
(cd "$work/m" && "$go" test -json -count=1 -vet=off -run "^($names)\$" ./calc >/dev/null)

each() { # each test in its own process, in folder $1
  for i in $(seq 1 "$n"); do
    (cd "$1" && "$go" test -json -count=1 -vet=off -run "^TestAdd$i\$" ./calc >/dev/null || true)
  done
}
copy() { # the head's tree, with every test's canary
  rm -rf "$work/copy"
  mkdir "$work/copy"
  git -C "$work/m" archive HEAD | tar -x -C "$work/copy"
  sed -i 's/^\(func TestAdd[0-9]*(t \*testing.T) {\)$/\1\n\tt.Fatal("aayu canary bench")/' "$work/copy/calc/calc_test.go"
}
now() { date +%s%N; }
floor=() canary=() joined=()
for _ in 1 2 3 4 5; do
  t0=$(now)
  each "$work/m"
  t1=$(now)
  copy
  each "$work/copy"
  t2=$(now)
  copy
  (cd "$work/copy" && "$go" test -json -count=1 -vet=off -run "^($names)\$" ./calc >/dev/null || true)
  t3=$(now)
  floor+=($(((t1 - t0) / 1000000)))
  canary+=($(((t2 - t1) / 1000000)))
  joined+=($(((t3 - t2) / 1000000)))
done
median() { printf '%s\n' "$@" | sort -n | sed -n 3p; }
f=$(median "${floor[@]}")
c=$(median "${canary[@]}")
j=$(median "${joined[@]}")
echo "$("$go" version), $n tests, median of 5 (warm cache):"
echo "  tests floor (a process a test):          ${f} ms"
echo "  + canary as built (a process a test):    ${c} ms"
echo "  + canary in one process (not built):     ${j} ms"
awk -v f="$f" -v c="$c" -v j="$j" 'BEGIN { printf "  ratio with the canary: %.2fx as built, %.2fx in one process\n", (f + c) / f, (f + j) / f }'
