# syntax=docker/dockerfile:1
#
# throttle-governor: a static binary in a `scratch` image, run as non-root.
#
#   docker build -t throttle-governor .
#       compiles a static (musl) binary from source in the `build` stage;
#   docker build --build-arg BINARY_SOURCE=prebuilt -t throttle-governor CONTEXT
#       skips compiling: CONTEXT holds this Dockerfile, a static binary named
#       `throttle-governor` and `ca-certificates.crt` (scripts/check-deploy
#       builds the image this way with buildah, no registry needed).
#
#   docker run -v ./config.toml:/etc/throttle-governor/config.toml:ro \
#       -p 9464:9464 throttle-governor
#
# The config's `[server] listen` must be "0.0.0.0:9464" (not 127.0.0.1) to be
# reachable from outside the container. The image also runs the simulator:
#   docker run -p 9100:9100 throttle-governor sim --model rejector --capacity 120 --listen 0.0.0.0:9100

# Where the binary and CA bundle come from: `build` or `prebuilt`.
ARG BINARY_SOURCE=build

# ---- build: static musl binary from source ---------------------------------
# The toolchain the project is tested with (dependencies need at least 1.88).
FROM rust:1.95-alpine AS build
# Alpine's package versions change with each point release: pinning them
# (DL3018) would break this build, and the toolchain is pinned by the image tag.
# hadolint ignore=DL3018
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY benches ./benches
COPY src ./src
RUN cargo build --release --locked --bin throttle-governor \
 && mkdir /out \
 && cp target/release/throttle-governor /out/throttle-governor \
 && cp /etc/ssl/certs/ca-certificates.crt /out/ca-certificates.crt

# ---- prebuilt: a static binary from the build context ----------------------
FROM scratch AS prebuilt
COPY throttle-governor ca-certificates.crt /out/

# ---- binary: whichever of the two BINARY_SOURCE names ----------------------
FROM ${BINARY_SOURCE} AS binary

# ---- runtime ----------------------------------------------------------------
FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="throttle-governor" \
      org.opencontainers.image.description="Adaptive backpressure for existing load tools, driven by the windowed attempt-failure fraction" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="README.md, section Dashboards and deployment"
# CA certificates at the standard path for TLS targets (rustls in the binary
# also carries Mozilla's roots, so HTTPS works either way).
COPY --from=binary /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=binary /out/throttle-governor /usr/local/bin/throttle-governor
# An unprivileged uid:gid with no entry in /etc/passwd (there is none).
USER 65532:65532
EXPOSE 9464
# scratch has no curl: the binary probes its own /healthz, at the address
# the config's `[server] listen` gives.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/throttle-governor", "healthcheck", "--config", "/etc/throttle-governor/config.toml"]
ENTRYPOINT ["/usr/local/bin/throttle-governor"]
CMD ["run", "--config", "/etc/throttle-governor/config.toml"]
