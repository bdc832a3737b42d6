#!/usr/bin/env bash
# Benchmark: `aayu verify --map` on a generated monorepo of 20,000 source files and 50 maps, beside ripgrep
# searching the same files for the same surface patterns in one process. Goals (docs/performance.md): the
# median of 9 paired runs at most 2.0x ripgrep's, and aayu's peak memory under 40 MiB.
#
#   tests/bench/verify-map.sh [FILES] [MAPS]      (defaults 20000 and 50)
#
# Needs git, python3 and rg (Debian's ripgrep, which the script installs as root). Builds aayu in release
# mode. Each pair runs ripgrep and aayu back to back, in alternating order, output discarded; wall time,
# CPU time and peak memory come from wait4(2). The ratio is printed last. The repository is generated under
# a temp dir and removed afterwards (KEEP=DIR keeps it there, for profiling; AAYU_TIMINGS=1 aayu verify
# --map then prints where the time goes; AAYU=PATH measures another aayu binary; PAIRS=N sets the pairs).
set -euo pipefail

files=${1:-20000}
maps=${2:-50}
per_map=$((files / maps))
features_per_map=8
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/mono
# KEEP=DIR keeps the generated repository there (for profiling).
if [ -n "${KEEP:-}" ]; then trap - EXIT; repo=$KEEP; rm -rf "$repo"; fi

if ! command -v rg >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq ripgrep >/dev/null || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }
  else
    echo "rg is missing: sudo apt-get install ripgrep" >&2
    exit 2
  fi
fi

# AAYU=PATH measures that binary (an older build, to compare) instead of building this checkout's.
if [ -n "${AAYU:-}" ]; then
  aayu=$AAYU
else
  echo "building aayu (release)..." >&2
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin aayu
  aayu=${CARGO_TARGET_DIR:-$root/target}/release/aayu
fi

echo "generating $files source files in $maps products..." >&2
python3 - "$repo" "$files" "$maps" "$features_per_map" <<'PY'
import os, sys
repo, files, maps, fpm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
per_map = files // maps
for m in range(maps):
    product = f"p{m:02d}"
    base = f"{repo}/products/{product}"
    claimed = {f: [] for f in range(fpm)}
    for j in range(per_map):
        sub = f"mod{j % 20:02d}"
        os.makedirs(f"{base}/src/{sub}", exist_ok=True)
        name = f"c{m}_{j}"
        feature = j % fpm
        claimed[feature].append(name)
        body = [f"//! generated module {j} of {product}", "use std::collections::HashMap;", ""]
        for k in range(60):
            body.append(f"fn helper_{k}(x: usize) -> usize {{ let mut m = HashMap::new(); m.insert(x, {k}); x + {k} }}")
        body.append(f'pub fn handler_{j}() {{ cmd("{name}"); button("Go {name}"); }}')
        with open(f"{base}/src/{sub}/f{j}.rs", "w") as fh:
            fh.write("\n".join(body) + "\n")
    skill = f"{base}/.agents/skills/verify-{product}/features"
    os.makedirs(skill, exist_ok=True)
    links = "\n".join(f"- [f{f}](f{f}.md)" for f in range(fpm))
    block = ('{"product": "%s", "control": ["aayu", "control"], "surfaces": ['
             '{"kind": "command", "files": ["products/%s/src/**/*.rs"], "pattern": "cmd\\\\(\\"([a-z0-9_]+)\\"\\\\)"}]}') % (product, product)
    with open(f"{skill}/README.md", "w") as fh:
        fh.write(f"# {product}\n\n```json\n{block}\n```\n\n{links}\n")
    for f in range(fpm):
        names = ", ".join(f'"{n}"' for n in claimed[f])
        fb = ('{"id": "f%d", "layers": ["L02"], "sources": ["products/%s/src"], '
              '"surfaces": {"command": [%s]}, "verified_at": ""}') % (f, product, names)
        check = '{"id": "go", "kind": "ui", "evidence": "screenshot", "steps": [{"click": {"name": "Go %s"}}]}' % claimed[f][0]
        with open(f"{skill}/f{f}.md", "w") as fh:
            fh.write(f"# F{f}\n\nFeature.\n\n```json\n{fb}\n```\n\n## Sub-features\n\n## How to reach it\n\n"
                     f"## Behaviour checks\n\n```json\n{check}\n```\n\n## Gotchas\n")
PY
(
  cd "$repo"
  git init -q -b main
  git -c user.name=bench -c user.email=bench@example.com add -A
  git -c user.name=bench -c user.email=bench@example.com commit -q -m generated
  # Every feature verified at that commit, as a maintained repository has it: the stale check then
  # compares every source file with its blob at that commit.
  sha=$(git rev-parse HEAD)
  find products -path '*/features/f*.md' -print0 | xargs -0 sed -i "s/\"verified_at\": \"\"/\"verified_at\": \"$sha\"/"
  git -c user.name=bench -c user.email=bench@example.com commit -q -a -m verified
)
bytes=$(du -sb "$repo/products" | cut -f1)
echo "generated $(git -C "$repo" ls-files | wc -l) files, $((bytes / 1024 / 1024)) MiB" >&2

# Sanity: the generated map is in sync and nothing is stale, so both tools do the full scan.
(cd "$repo" && "$aayu" verify --map | tail -n 1) >&2

# ripgrep, one process, the same patterns over the same files (the feature sources are the same files).
rg_cmd="rg --no-filename --no-heading --line-number --only-matching -e 'cmd\\(\"([a-z0-9_]+)\"\\)' -e '\"Go c[0-9_]+\"' products"
aayu_cmd="$aayu verify --map --json"

python3 - "$repo" "$aayu" "${PAIRS:-9}" <<'PY'
import os, statistics, subprocess, sys, time
repo, aayu, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
commands = {
    "ripgrep": ["rg", "--no-filename", "--no-heading", "--line-number", "--only-matching",
                "-e", 'cmd\\("([a-z0-9_]+)"\\)', "-e", '"Go c[0-9_]+"', "products"],
    "aayu verify --map": [aayu, "verify", "--map", "--json"],
}
def run(argv):
    """Wall seconds, CPU seconds and peak RSS (KiB) of one run, output discarded."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        sys.exit(f"{argv[0]} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss
for argv in commands.values():  # warm the page cache and the binaries
    run(argv); run(argv)
results = {name: [] for name in commands}
for pair in range(pairs):
    order = list(commands.items()) if pair % 2 == 0 else list(reversed(commands.items()))
    for name, argv in order:
        results[name].append(run(argv))
def median(name, i):
    return statistics.median(r[i] for r in results[name])
for name in commands:
    print(f"{name:<19} {median(name, 0)*1000:7.1f} ms wall  {median(name, 1)*1000:7.1f} ms cpu  "
          f"{max(r[2] for r in results[name])/1024:5.1f} MiB peak   (median of {pairs})")
rg, aayu_ = median("ripgrep", 0), median("aayu verify --map", 0)
peak = max(r[2] for r in results["aayu verify --map"]) / 1024
ratio = aayu_ / rg
cpu = median("aayu verify --map", 1) / median("ripgrep", 1)
print(f"peak memory        {peak:5.1f} MiB   (goal: < 40 MiB) {'ok' if peak < 40 else 'MISSED'}")
print(f"ratio              {ratio:5.2f}x wall, {cpu:.2f}x cpu   (goal: <= 2.00x) {'ok' if ratio <= 2 else 'MISSED'}")
PY
