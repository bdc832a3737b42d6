# The aayudha verify action's image: aayu built in a Rust image, run from a small Debian with git.
# GitHub runs it as root with --workdir /github/workspace; every path comes from the environment.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin aayu

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 # The workspace belongs to the runner's uid while the action is root: trust it in the system config,
 # because HOME (and so the global config) is /github/home at run time.
 && git config --system --add safe.directory '*'
COPY --from=build /src/target/release/aayu /usr/local/bin/aayu
ENTRYPOINT ["/usr/local/bin/aayu", "action"]
