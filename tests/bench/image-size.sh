#!/usr/bin/env bash
# Benchmark: the sizes of the action's two images, from the same parts the Dockerfile puts in them, built
# here without a container engine: the runtime root filesystem of each target from Debian packages
# (mmdebstrap, variant apt — a little larger than the debian:bookworm-slim base, which drops docs and
# locales), plus the toolchains the full image copies and aayu itself. CI's image job builds the real
# images with Docker and prints their sizes beside these (.github/workflows/ci.yml).
#
#   sudo tests/bench/image-size.sh
#
# Needs root, mmdebstrap and a release build of aayu (CARGO_TARGET_DIR or ./target).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /var/tmp/aayu-image-size-XXXXXX)
trap 'rm -rf "$work"' EXIT

# The package lists, read from the Dockerfile's two runtime stages.
packages() {
  awk -v stage="$1" '
    /^FROM / { inside = ($NF == stage) }
    inside && /apt-get install -y --no-install-recommends/ { on = 1; sub(/.*--no-install-recommends/, "") }
    inside && on { line = $0; sub(/&&.*/, "", line); gsub(/\\/, "", line); printf "%s ", line; if ($0 ~ /&&/ && !/install -y/) on = 0 }
  ' "$root/Dockerfile" | tr -s ' ' '\n' | grep -v '^$' | paste -sd, -
}
size_of_tar() { tar -tvf "$1" | awk '{ s += $3 } END { printf "%d", s }'; }
mib() { echo $(( $1 / 1024 / 1024 )); }

aayu=${CARGO_TARGET_DIR:-$root/target}/release/aayu
[ -x "$aayu" ] || cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin aayu
aayu_bytes=$(stat -c %s "$aayu")

for target in slim full; do
  list=$(packages "$target")
  mmdebstrap --variant=apt --format=tar --quiet --include="$list" bookworm "$work/$target.tar"
  bytes=$(size_of_tar "$work/$target.tar")
  echo "$target: Debian packages ($list): $(mib "$bytes") MiB" >&2
  eval "${target}_bytes=$bytes"
done

# The toolchains the full image copies: measured from this machine's (rustup's default toolchain, Go's
# root, Node's binary and npm); the official images' minimal Rust profile is smaller than a full one.
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
toolchain=$(sed -n 's/^default_toolchain = "\(.*\)"/\1/p' "$rustup_home/settings.toml")
rust_bytes=$(du -sb "$rustup_home/toolchains/$toolchain" | cut -f1)
go_bytes=$(du -sb "$(go env GOROOT)/" | cut -f1)
node_bytes=0
if command -v node >/dev/null; then
  node_bytes=$(( $(stat -c %s "$(readlink -f "$(command -v node)")") + $(du -sb "$(npm root -g)/npm" | cut -f1) ))
fi
echo "toolchains: Rust $(mib "$rust_bytes") MiB, Go $(mib "$go_bytes") MiB, Node $(mib "$node_bytes") MiB" >&2

echo "slim image   $(mib $(( slim_bytes + aayu_bytes ))) MiB   (packages + aayu)"
echo "full image   $(mib $(( full_bytes + aayu_bytes + rust_bytes + go_bytes + node_bytes ))) MiB   (packages + aayu + toolchains)"
