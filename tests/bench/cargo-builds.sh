#!/usr/bin/env bash
# Benchmark: aayu's Rust builds beside bare cargo, on a small CLI crate of our own (tests/bench/cargo-builds/:
# `wordcount`, with clap, serde, serde_json and regex — 33 packages in its Cargo.lock) and a feature map
# with one cli check (`{"build": "."}`, then `{"run": ["wordcount", "a b c"]}`).
#
#   A. The local loop: `aayu verify --check count.counts-words` run again with no change, beside what the
#      check does by hand with cargo — `cargo build` with nothing changed (incremental) plus one run of the
#      built binary. Goal: at most 2.0x.
#   B. The gate: `aayu verify --ci` of a bug fix (story 5, `type:bug`: the base counts an empty text as one
#      word; the head fixes it and adds the unit test its evidence map names), beside one cold
#      `cargo build --tests` of the head in a fresh, empty target dir. Goal: at most 1.3x.
#
#   tests/bench/cargo-builds.sh
#
# Needs cargo, git and python3, and crates.io once (`cargo fetch --locked` before anything is timed, so
# nothing downloads while timing; every timed cargo command runs `--offline`). Builds aayu in release mode
# unless AAYU=PATH names a binary to measure. The crate is copied into a temp git repository under
# /var/tmp (mode 0755: as root, aayu runs product code as sandbox uids, which must be able to enter it):
# the map from cargo-builds/map/ goes to .agents/skills/verify-wordcount/features/ (kept out of that
# path in this repository, so aayu's own `verify --map` does not find it), the base commit has
# cargo-builds/story/lib.base.rs as src/lib.rs, the head the crate's own src/lib.rs and the evidence map.
# RUNS=N (default 3) sets the repeats of the cheap commands (the incremental build, the binary's run)
# and of the later `verify --check` runs; CI_RUNS=N (default 1) the repeats of the two cold ones of B.
# Wall time and CPU time (user + system of the command and all it waited for) come from wait4(2); the
# medians are printed in a table, the ratios (of wall time; CPU beside it) last. aayu runs product code
# at nice 10, so on a busy machine its wall time suffers more than bare cargo's: compare the CPU ratio.
# aayu's kept build folders (AAYUDHA_BUILD_CACHE) are put in the temp dir too. The temp dir is removed
# afterwards (KEEP=DIR keeps it there: the repository, the cargo target dirs, aayu's build folders, and
# each command's stdout and stderr under DIR/logs/).
set -euo pipefail

runs=${RUNS:-3}
ci_runs=${CI_RUNS:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)
fixture=$root/tests/bench/cargo-builds
umask 022

# AAYU=PATH measures that binary (an older build, to compare) instead of building this checkout's.
if [ -n "${AAYU:-}" ]; then
  aayu=$(realpath "$AAYU")
else
  echo "building aayu (release)..." >&2
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin aayu
  aayu=${CARGO_TARGET_DIR:-$root/target}/release/aayu
fi
[ -x "$aayu" ] || { echo "no aayu binary at $aayu" >&2; exit 2; }
# Every cargo below names its own target dir; aayu gives its sandbox one per slot.
unset CARGO_TARGET_DIR

# KEEP=DIR keeps the repository, the target dirs and the logs there.
if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  rm -rf "$work"
  mkdir -p "$work"
else
  work=$(mktemp -d -p /var/tmp cargo-builds.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
chmod 755 "$work"
work=$(cd "$work" && pwd)
if [ "$(id -u)" = 0 ]; then
  dir=$work
  while :; do
    if (( (8#$(stat -c '%a' "$dir") & 1) == 0 )); then
      echo "$dir is not enterable by other users (aayu's sandbox uids): chmod o+x it, or KEEP=DIR elsewhere" >&2
      exit 2
    fi
    [ "$dir" = / ] && break
    dir=$(dirname "$dir")
  done
fi
repo=$work/repo
logs=$work/logs
# aayu keeps a local `verify --check`'s cargo target folders between runs (docs/behaviour-checks.md,
# "Build folders"; older builds ignore this): here, so that the first run starts cold and nothing is left
# behind in /var/cache/aayudha or ~/.cache/aayudha.
export AAYUDHA_BUILD_CACHE=$work/build-cache
mkdir -p "$repo" "$logs"

echo "making the repository in $repo..." >&2
g() { git -C "$repo" "$@"; }
g init -q -b main
g config user.name "Bench Author"
g config user.email "bench@example.com"
g config commit.gpgsign false
cp "$fixture/Cargo.toml" "$fixture/Cargo.lock" "$repo/"
cp -R "$fixture/src" "$repo/src"
mkdir -p "$repo/.agents/skills/verify-wordcount/features"
cp "$fixture/map/"*.md "$repo/.agents/skills/verify-wordcount/features/"
printf '/target\n.aayudha/runs/\n.aayudha/proof/\n' >"$repo/.gitignore"
cp "$fixture/story/lib.base.rs" "$repo/src/lib.rs"
g add -A
g commit -q -m "wordcount: counts the parts between runs of whitespace"
base=$(g rev-parse HEAD)
cp "$fixture/src/lib.rs" "$repo/src/lib.rs"
mkdir -p "$repo/.aayudha/evidence"
cp "$fixture/story/evidence.toml" "$repo/.aayudha/evidence/5.toml"
g add -A
g commit -q -m "fix: an empty or blank text has no words"
head=$(g rev-parse HEAD)

# The Ready snapshot of story 5 (a bug): its Completion Goal and that goal's sha256.
ready=$work/ready-5.md
python3 - "$fixture/story/goal.md" "$ready" <<'PY'
import hashlib, sys
goal = open(sys.argv[1], encoding="utf-8").read().rstrip("\n")
digest = hashlib.sha256(goal.encode()).hexdigest()
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    fh.write(f'# Story 5: t\n\n<!-- aayudha:ready {{"story": 5, "completion_goal_hash": "{digest}", '
             f'"labels": ["type:bug"]}} -->\n\n## Completion Goal\n\n{goal}\n')
PY

echo "fetching the crate's dependencies..." >&2
cargo fetch --locked --quiet --manifest-path "$repo/Cargo.toml"

# `timed NAME LOG CMD...`: runs CMD in the repository with its stdout in LOG and stderr in LOG.err, and
# appends "wall,cpu" in microseconds to the array NAME — wall time and the CPU time (user + system) of CMD
# and every process it waited for, from wait4(2). A failure prints the logs' ends and stops the benchmark.
timer=$work/timer.py
cat >"$timer" <<'PY'
import os, sys, time
out, err = sys.argv[1], sys.argv[2]
t0 = time.perf_counter_ns()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    try:
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = (time.perf_counter_ns() - t0) // 1000
cpu = round((usage.ru_utime + usage.ru_stime) * 1e6)
print(f"{wall},{cpu}")
sys.exit(os.waitstatus_to_exitcode(status))
PY
timed() {
  local -n into=$1
  local log=$2
  shift 2
  local took code=0
  took=$(cd "$repo" && python3 "$timer" "$log" "$log.err" "$@") || code=$?
  if [ "$code" != 0 ]; then
    echo "failed (exit $code): $*" >&2
    tail -n 40 "$log.err" >&2
    tail -c 4000 "$log" >&2
    exit 1
  fi
  into+=("$took")
}
cargo_a=(env CARGO_TARGET_DIR="$work/target-a" cargo build --locked --offline --quiet)
# The check's run step, by hand: the built binary with its argument (its stdout is compared below).
run_bin=("$work/target-a/debug/wordcount" "a b c")
check=(env NO_COLOR=1 "$aayu" verify --check count.counts-words --json)
# The report must say passed.
passed() {
  python3 - "$1" <<'PY'
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
bad = [c for c in checks if c["status"] != "passed"]
if len(checks) != 1 or bad:
    sys.exit(f"the check did not pass: {json.dumps(checks, indent=1)}")
PY
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "A: cargo build (cold warm-up, incremental x$runs), the binary's run x$runs..." >&2
cold_a=() incr=() bin=() check_first=() check_later=()
timed cold_a "$logs/cargo-cold-a" "${cargo_a[@]}"
for _ in $(seq "$runs"); do timed incr "$logs/cargo-incremental" "${cargo_a[@]}"; done
for _ in $(seq "$runs"); do
  timed bin "$logs/bin-run" "${run_bin[@]}"
  grep -qxF '{"words":3}' "$logs/bin-run" || { echo "wordcount printed: $(cat "$logs/bin-run")" >&2; exit 1; }
done

echo "A: aayu verify --check count.counts-words (first, then x$runs)..." >&2
timed check_first "$logs/check-1.json" "${check[@]}"
passed "$logs/check-1.json"
for i in $(seq "$runs"); do
  timed check_later "$logs/check-$((i + 1)).json" "${check[@]}"
  passed "$logs/check-$((i + 1)).json"
done
grep -h 'counts-words' "$logs/check-1.json.err" "$logs/check-2.json.err" >&2 || true

echo "B: cargo build --tests cold in a fresh target dir, and aayu verify --ci (x$ci_runs)..." >&2
cold_tests=() ci=()
for i in $(seq "$ci_runs"); do
  fresh=$work/target-b-$i
  mkdir "$fresh"
  timed cold_tests "$logs/cargo-tests-cold" env CARGO_TARGET_DIR="$fresh" cargo build --tests --locked --offline --quiet
  rm -rf "$fresh"
  rm -rf "$repo/.aayudha/proof"
  timed ci "$logs/ci-$i.json" env NO_COLOR=1 "$aayu" verify --ci --base "$base" --head "$head" --story 5 \
    --ready "$ready" --json
done
python3 - "$logs/ci-1.json" <<'PY' >&2
import json, sys
pack = json.load(open(sys.argv[1]))
for c in pack["checks"]:
    print(f'  {c["floor"]:<12} {c["result"]:<8} {c.get("detail", "")}')
PY
status=$(g status --porcelain --untracked-files=all)
[ -z "$status" ] || { echo "the runs left the working tree changed:" >&2; echo "$status" >&2; }

echo "machine: $(nproc) cores; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
python3 - "${cold_a[*]}" "${incr[*]}" "${bin[*]}" "${check_first[*]}" "${check_later[*]}" \
  "${cold_tests[*]}" "${ci[*]}" <<'PY'
import statistics, sys
names = ["cargo build, cold (warm-up, not a peer)", "cargo build, incremental (no change)",
         "wordcount \"a b c\" (the check's run step)", "aayu verify --check, first run",
         "aayu verify --check, later runs", "cargo build --tests, cold, fresh target (head)",
         "aayu verify --ci (story 5, type:bug)"]
series = [[tuple(int(v) / 1e6 for v in x.split(",")) for x in s.split()] for s in sys.argv[1:]]
wall = [statistics.median(w for w, _ in s) for s in series]
cpu = [statistics.median(c for _, c in s) for s in series]
fmt = lambda t: f"{t:.3f} s" if t < 10 else f"{t:.2f} s"
print(f'{"":<48} {"runs":>4} {"wall":>9} {"cpu":>9}   wall of each run')
for name, s, w, c in zip(names, series, wall, cpu):
    print(f"{name:<48} {len(s):>4} {fmt(w):>9} {fmt(c):>9}   {' '.join(f'{x:.3f}' for x, _ in s)}")
print()
def ratio(label, top, bottom, goal, what):
    a = wall[top] / sum(wall[i] for i in bottom)
    b = cpu[top] / sum(cpu[i] for i in bottom)
    peer = " + ".join(fmt(wall[i]) for i in bottom)
    print(f"{label}  {what} = {fmt(wall[top])} / ({peer}) = {a:.2f}x wall, {b:.2f}x cpu"
          f"  (goal at most {goal}x wall: {'met' if a <= goal else 'NOT met'})")
ratio("A", 4, [1, 2], 2.0, "verify --check, later run / (cargo incremental + binary run)")
ratio("B", 6, [5], 1.3, "verify --ci / cold cargo build --tests")
PY
