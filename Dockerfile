# syntax=docker/dockerfile:1
# The shortener's image: `docker build -t shortener .` (or `podman build -t shortener .`),
# then `docker run -p 8080:8080 -v shortener-data:/data shortener`.
#
# A build pulls one image, the Rust toolchain's (RUST_IMAGE), and compiles the `shortener`
# binary in it. The image that runs starts FROM scratch and holds only that binary, the C
# libraries it links (copied from the build stage, as `ldd` lists them), the CA roots for
# TLS to Redis and PostgreSQL, and a non-root user: no shell, no package manager.
#
# Configuration is the twelve-factor kind: every key as SHORTENER_<SECTION>__<KEY>, a file
# through SHORTENER_CONFIG, a secret through SHORTENER_<SECTION>__<KEY>_FILE (the path of
# a file holding the value, e.g. a mounted Docker or Kubernetes secret). Nothing secret is
# baked in.
#
# `docker run ... shortener ratelimit-server` runs Envoy's rate limit service instead,
# with envoyproxy/ratelimit's variables (RUNTIME_ROOT, REDIS_URL, ...); its health check
# is `shortener health --ratelimit-server`.

ARG RUST_IMAGE=docker.io/library/rust:1.95-slim-bookworm

FROM ${RUST_IMAGE} AS build
# The commit the binary reports (`shortener --version`, shortener_build_info): the build
# context holds no `.git`, so it is passed in (`--build-arg COMMIT=$(git rev-parse HEAD)`).
ARG COMMIT=""
# make: jemalloc, the server's allocator, is built by its own Makefile (the slim image
# has the C compiler, not make).
RUN apt-get update \
    && apt-get install --yes --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The registry and target directory are build caches, not layers: a rebuild after a source
# change compiles only what changed, and the image never holds them.
RUN --mount=type=cache,id=shortener-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=shortener-cargo-target,target=/src/target \
    BUILT_FROM_COMMIT="$COMMIT" cargo build --release --locked --package shortener-server \
    && install -D -m 0755 target/release/shortener /rootfs/usr/local/bin/shortener
# What the binary needs at run time, gathered under /rootfs: the libraries the dynamic
# loader maps (whatever the architecture calls them), the CA roots, /tmp for SQLite's
# temporary files, and the user it runs as.
RUN set -eu; \
    ldd /rootfs/usr/local/bin/shortener \
        | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' \
        | while read -r library; do cp --parents -L "$library" /rootfs; done; \
    mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /data; \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/; \
    chmod 1777 /rootfs/tmp; \
    echo 'shortener:x:10001:10001:shortener:/data:/nonexistent' > /rootfs/etc/passwd; \
    echo 'shortener:x:10001:' > /rootfs/etc/group

FROM scratch
ARG COMMIT=""
ARG VERSION=0.1.0
COPY --from=build /rootfs /
# The volume's directory belongs to the user, so that a new named volume does too.
COPY --from=build --chown=10001:10001 /data /data
USER 10001:10001
WORKDIR /data
ENV SHORTENER_SERVER__BIND=0.0.0.0:8080 \
    SHORTENER_STORAGE__URL=sqlite:///data/shortener.db \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
VOLUME /data
EXPOSE 8080
# SIGTERM drains the connections, flushes the visits, checkpoints SQLite and exits 0 within
# server.shutdown_timeout_ms (10 s by default: give `docker stop -t` more than that).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/shortener", "health"]
LABEL org.opencontainers.image.title="shortener" \
      org.opencontainers.image.description="URL shortener with a distributed rate limiter, and Envoy's rate limit service" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
ENTRYPOINT ["/usr/local/bin/shortener"]
CMD ["serve"]
