# syntax=docker/dockerfile:1
# The aayudha verify action's images, two targets of one build (docs/action.md, "The images"):
#
#   full (the default, last stage) — aayu with git, Rust (rustup, in /usr/local/rustup and /usr/local/cargo),
#        Go (/usr/local/go), Node.js LTS with npm, Python 3 and Chromium: the gate and the sweep, which run
#        the product's builds, tests and checks;
#   slim — aayu with git only: the pack job (`aayudha/verify/slim`), which runs no product code, and gates
#        that check maps only.
#
# Releases build both for linux/amd64 and linux/arm64 (.github/workflows/release.yml) and pin them by digest
# in action.yml and slim/action.yml; `image: Dockerfile` is only for the default branch's development.
#
# GitHub runs the container as root with `--workdir /github/workspace`, HOME=/github/home and every path in
# the environment (actions/runner ContainerActionHandler). So: no USER and no reliance on WORKDIR, the binary
# at an absolute path, an exec-form ENTRYPOINT (aayu is PID 1 and handles SIGINT/SIGTERM itself), the
# toolchain's homes in ENV (HOME changes at run time), `safe.directory` in git's *system* config, and every
# toolchain readable — never writable — by other users: product code runs as aayu's sandbox uids.
#
# Every base image is pinned by digest (multi-arch index). The release workflow checks each one is there for
# both platforms before it builds; to move to newer bases, run scripts/refresh-image-digests.
ARG RUST_IMAGE=rust:1.95-bookworm@sha256:6258907abe69656e41cd992e0b705cdcfabcbbe3db374f92ed2d47121282d4a1
ARG GO_IMAGE=golang:1.25-bookworm@sha256:ea341baa9bd5ba6784f6d7161ace70544349a6242d54d34a0fbfd2c4d51c9d58
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df
ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:7b140f374b289a7c2befc338f42ebe6441b7ea838a042bbd5acbfca6ec875818

# aayu itself.
FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin aayu \
 && install -D -m 0755 target/release/aayu /out/aayu

# aayu as one static binary (musl), for the GitHub release: `docker buildx build --target binary --output`.
FROM ${RUST_IMAGE} AS static
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The release commit and tag, which the release binaries pin themselves to (`aayu init` writes `uses:
# aayudha/verify@<sha> # <tag>` with no network); empty for any other build.
ARG AAYU_RELEASE_SHA=
ARG AAYU_RELEASE_TAG=
RUN target="$(uname -m)-unknown-linux-musl" \
 && rustup target add "$target" \
 && cargo build --release --locked --bin aayu --target "$target" \
 && install -D -m 0755 "target/$target/release/aayu" /out/aayu
FROM scratch AS binary
COPY --from=static /out/aayu /aayu

# The toolchains the full image copies, each from its official image.
FROM ${RUST_IMAGE} AS rust
FROM ${GO_IMAGE} AS go
FROM ${NODE_IMAGE} AS node
# pnpm and yarn 1, prepared by corepack at build time (checked against the registry's signatures) into a
# COREPACK_HOME the full image keeps read-only: aayu runs them from there for a pnpm-lock.yaml or a yarn 1
# yarn.lock, never through a shim that reads the checkout's `packageManager`. scripts/test prepares the
# same versions (tests/it/image.rs checks both).
ENV COREPACK_HOME=/usr/local/share/corepack
RUN corepack install -g pnpm@10.24.0 yarn@1.22.22

FROM ${DEBIAN_IMAGE} AS slim
# Debian's stable packages are not pinned to a version: bookworm ships security fixes under the same
# names, and a pinned version disappears from the archive when one lands.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 # The workspace belongs to the runner's uid (1001) while the action is root: trust it in the system
 # config, because HOME (and so the global config) is /github/home at run time.
 && git config --system --add safe.directory '*'
COPY --from=build /out/aayu /usr/local/bin/aayu
ENTRYPOINT ["/usr/local/bin/aayu", "action"]

FROM ${DEBIAN_IMAGE} AS full
# The runtime packages. tests/it/image.rs builds a root filesystem from exactly this list with mmdebstrap
# and runs the gate in it; it fails when its list and this one differ. `llvm-22` is the llvm-profdata and
# llvm-cov the coverage floor reads Rust's profiles with: its version is the LLVM of the rust image's rustc
# (`rustc -vV`; rust 1.95 is LLVM 22, in bookworm-security) — change both together.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
      chromium \
      fonts-liberation \
      gcc \
      git \
      libc6-dev \
      llvm-22 \
      make \
      pkg-config \
      python3 \
      python3-pip \
      python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && git config --system --add safe.directory '*'
COPY --from=rust /usr/local/rustup /usr/local/rustup
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=go /usr/local/go /usr/local/go
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
COPY --from=node /usr/local/share/corepack /usr/local/share/corepack
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack \
 && ln -s ../lib/node_modules/corepack/dist/pnpm.js /usr/local/bin/pnpm \
 && ln -s ../lib/node_modules/corepack/dist/yarn.js /usr/local/bin/yarn \
 # Readable and runnable by the sandbox uids, writable by none of them.
 && chmod -R a+rX,go-w /usr/local/rustup /usr/local/cargo /usr/local/go /usr/local/lib/node_modules \
      /usr/local/share/corepack
# Corepack's shims (a check's own `pnpm`) use only what is prepared: no download at run time.
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    GOROOT=/usr/local/go \
    COREPACK_HOME=/usr/local/share/corepack \
    COREPACK_ENABLE_NETWORK=0 \
    COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \
    PATH=/usr/local/cargo/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY --from=build /out/aayu /usr/local/bin/aayu
ENTRYPOINT ["/usr/local/bin/aayu", "action"]
