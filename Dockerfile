# The aayudha verify action's image: aayu built in a Rust image, run from a small Debian with git.
#
# GitHub runs it as root with `--workdir /github/workspace`, HOME=/github/home and every path in the
# environment (reference: actions/runner ContainerActionHandler). So: no USER and no reliance on WORKDIR,
# the binary at an absolute path, an exec-form ENTRYPOINT (aayu is PID 1 and handles SIGINT/SIGTERM itself,
# stopping its sandboxed process groups), and `safe.directory` in the *system* git config.
#
# To add a product's toolchain, extend this image (see docs/action.md):
#   FROM ghcr.io/aayudha/verify@sha256:<digest>
#   RUN apt-get update && apt-get install -y --no-install-recommends golang-go && rm -rf /var/lib/apt/lists/*
# and use it as `uses: docker://<your image>@sha256:<digest>` (inputs still arrive as INPUT_*).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin aayu \
 && install -D -m 0755 target/release/aayu /out/aayu

FROM debian:bookworm-slim
# Debian's stable packages are not pinned to a version: bookworm ships security fixes under the same
# names, and a pinned version disappears from the archive when one lands.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 # The workspace belongs to the runner's uid (1001) while the action is root: trust it in the system
 # config, because HOME (and so the global config) is /github/home at run time. aayu's own git library
 # accepts it in `aayu action` as well.
 && git config --system --add safe.directory '*'
COPY --from=build /out/aayu /usr/local/bin/aayu
ENTRYPOINT ["/usr/local/bin/aayu", "action"]
