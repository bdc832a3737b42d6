#!/usr/bin/env bash
# Benchmark: `aayu verify --map` on a generated monorepo of 20,000 source files and 50 maps, next to
# ripgrep scanning the same files for the same patterns in one process. The goal is at most 2x rg.
#
#   tests/bench/verify-map.sh [FILES] [MAPS]      (defaults 20000 and 50)
#
# Needs: git, rg (Debian's ripgrep); hyperfine when present, else a plain timing loop. Builds aayu in
# release mode. The repository is generated under a temp dir and removed afterwards.
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

command -v rg >/dev/null || { echo "rg is missing: apt-get install ripgrep" >&2; exit 2; }

echo "building aayu (release)..." >&2
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin aayu
aayu=${CARGO_TARGET_DIR:-$root/target}/release/aayu

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

if command -v hyperfine >/dev/null; then
  (cd "$repo" && hyperfine --warmup 2 --runs 10 --ignore-failure --export-json "$work/h.json" \
     -n ripgrep "$rg_cmd > /dev/null" -n "aayu verify --map" "$aayu_cmd > /dev/null") >&2
  python3 - "$work/h.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
rg, aayu = r["ripgrep"], r["aayu verify --map"]
print(f"ripgrep            {rg*1000:8.1f} ms (median)")
print(f"aayu verify --map  {aayu*1000:8.1f} ms (median)")
print(f"ratio              {aayu/rg:8.2f}x   (goal: <= 2.00x)")
PY
else
  t() { local s e; s=$(date +%s%N); for _ in 1 2 3 4 5; do (cd "$repo" && eval "$1" >/dev/null) || true; done; e=$(date +%s%N); echo $(( (e - s) / 5000000 )); }
  rg_ms=$(t "$rg_cmd"); aayu_ms=$(t "$aayu_cmd")
  echo "ripgrep            $rg_ms ms (mean of 5)"
  echo "aayu verify --map  $aayu_ms ms (mean of 5)"
  python3 -c "print(f'ratio              {$aayu_ms/max($rg_ms,1):8.2f}x   (goal: <= 2.00x)')"
fi
