#!/usr/bin/env bash
# Builds the container image and runs it here, with no registry and no Docker
# daemon (called by scripts/check-deploy):
#   0. the files the Dockerfile's `build` stage COPYs (read from the
#      Dockerfile) are enough to compile: `cargo check` on a copy of just them;
#   1. a static binary (glibc, +crt-static; or $STATIC_TARGET) is built on the
#      host with cargo;
#   2. the Dockerfile's final stage is built with buildah from a context that
#      holds that binary and the host's CA bundle (BINARY_SOURCE=prebuilt,
#      FROM scratch only: nothing is pulled);
#   3. the image's metadata is checked: non-root user, HEALTHCHECK, OCI
#      labels, default command, size within the budget;
#   4. the image is run with podman (host network) against a `sim` on the
#      host, reached by a host name that a DNS stub on 127.0.0.1 resolves (as
#      compose's DNS would); it must serve /healthz and /metrics, govern the
#      sim (its writes take effect), pass its own HEALTHCHECK, run as a
#      non-root uid, and exit 0 on `podman stop`.
# Everything runs in a temporary folder (its own container storage included)
# and every process and container is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

MAX_BYTES=${MAX_IMAGE_BYTES:-20000000}   # 20 MB
# glibc by default (no extra toolchain needed); STATIC_TARGET=x86_64-unknown-linux-musl
# builds what the Dockerfile's `build` stage builds, where that target is installed.
TRIPLE=${STATIC_TARGET:-x86_64-unknown-linux-gnu}
TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
BINARY=$TARGET_DIR/$TRIPLE/release/throttle-governor
IMAGE=localhost/throttle-governor:check
SIM_HOST=sim.throttle-governor.test

say() { echo "container: $*"; }
fail() { echo "container: FAILED: $*" >&2; exit 1; }

work=$(mktemp -d /tmp/tg-container.XXXXXX)
storage=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
podman_=(podman "${storage[@]}" --cgroup-manager cgroupfs --runtime runc)
container=tg-check-$$
pids=()
cleanup() {
  local status=$?
  "${podman_[@]}" rm -f -t 5 "$container" >/dev/null 2>&1 || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((status != 0)); then
    for log in "$work"/*.log; do [[ -f $log ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }; done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# The interpreter itself, not a shim, so that $! is the process to stop.
py=$(python3 -c 'import sys; print(sys.executable)')
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() { # URL SECONDS
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null --max-time 2 "$1"; do
    ((SECONDS < deadline)) || fail "no answer from $1 after $2 s"
    sleep 0.5
  done
}

# ---- 0. the build stage's inputs ------------------------------------------------
# The COPY sources of the `build` stage, as the Dockerfile lists them.
mapfile -t sources < <(awk '
  /^FROM / { in_build = ($0 ~ / AS build$/); next }
  in_build && /^COPY / { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' Dockerfile)
((${#sources[@]})) || fail "found no COPY in the Dockerfile's build stage"
mkdir -p "$work/source"
for source in "${sources[@]}"; do
  [[ -e $source ]] || fail "the Dockerfile's build stage copies $source, which does not exist"
  cp -r "$source" "$work/source/"
done
(cd "$work/source" && timeout 900 cargo check --locked --offline --quiet --target-dir "$TARGET_DIR" --bin throttle-governor) \
  || fail "the build stage's sources (${sources[*]}) do not compile on their own"
say "the build stage's COPY set (${sources[*]}) compiles on its own"

# ---- 1. static binary ---------------------------------------------------------
say "building a static release binary ($TRIPLE, +crt-static)"
start=$SECONDS
RUSTFLAGS='-C target-feature=+crt-static' timeout 1800 \
  cargo build --release --locked --quiet --target "$TRIPLE" --bin throttle-governor
say "built in $((SECONDS - start)) s"
if readelf -d "$BINARY" | grep -q NEEDED; then
  fail "$BINARY is dynamically linked: $(readelf -d "$BINARY" | grep NEEDED | tr -s ' ')"
fi

# ---- 2. the final stage, from a prebuilt context ------------------------------
context=$work/context
mkdir -p "$context"
cp Dockerfile .dockerignore "$context/"
cp "$BINARY" "$context/throttle-governor"
strip "$context/throttle-governor"
cp /etc/ssl/certs/ca-certificates.crt "$context/ca-certificates.crt"
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
say "buildah bud --isolation chroot (BINARY_SOURCE=prebuilt)"
timeout 300 buildah "${storage[@]}" bud --isolation chroot --format docker --quiet \
  --build-arg BINARY_SOURCE=prebuilt --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  -t "$IMAGE" "$context" >"$work/buildah.log" 2>&1 || { cat "$work/buildah.log" >&2; fail "buildah bud"; }

# ---- 3. image metadata --------------------------------------------------------
inspect() { "${podman_[@]}" image inspect "$IMAGE" --format "$1"; }
size=$(inspect '{{.Size}}')
say "image size: $size bytes ($(( (size + 500000) / 1000000 )) MB; budget $((MAX_BYTES / 1000000)) MB)"
((size <= MAX_BYTES)) || fail "the image is $size bytes, over the budget of $MAX_BYTES"
user=$(inspect '{{.Config.User}}')
uid=${user%%:*}
[[ -n $uid && $uid != 0 && $uid != root ]] || fail "the image runs as '$user', not a non-root uid"
[[ $(inspect '{{json .Config.Healthcheck.Test}}') == *'"healthcheck"'* ]] || fail "no HEALTHCHECK running 'throttle-governor healthcheck'"
[[ $(inspect '{{json .Config.Cmd}}') == '["run","--config","/etc/throttle-governor/config.toml"]' ]] \
  || fail "default command is $(inspect '{{json .Config.Cmd}}')"
for label in title description version revision licenses; do
  [[ -n $(inspect "{{index .Config.Labels \"org.opencontainers.image.$label\"}}") ]] || fail "no OCI label org.opencontainers.image.$label"
done
[[ $(inspect '{{index .Config.Labels "org.opencontainers.image.revision"}}') == "$revision" ]] || fail "revision label is not $revision"
say "metadata: user $user, HEALTHCHECK, default command, OCI labels: ok"

# ---- 4. run it against a sim on the host ----------------------------------------
sim_port=$(free_port)
ctl_port=$(free_port)
"$BINARY" sim --model rejector --capacity 120 --listen "127.0.0.1:$sim_port" >"$work/sim.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$sim_port/metrics" 20

name_args=()
"$py" deploy/checks/dns_stub.py 127.0.0.1 53 >"$work/dns.log" 2>&1 &
pids+=($!)
sleep 0.5
if kill -0 "${pids[-1]}" 2>/dev/null; then
    echo "nameserver 127.0.0.1" >"$work/resolv.conf"
    name_args=(-v "$work/resolv.conf:/etc/resolv.conf:ro")
  say "the controller reaches the sim as $SIM_HOST through a DNS stub on 127.0.0.1:53"
fi
if ((${#name_args[@]} == 0)); then
  name_args=(--add-host "$SIM_HOST:127.0.0.1")
  say "port 53 is taken: the controller reaches the sim as $SIM_HOST through /etc/hosts"
fi

sed -e "s#http://127.0.0.1:9100#http://$SIM_HOST:$sim_port#g" \
    -e "s#^listen = \"127.0.0.1:9464\"#listen = \"127.0.0.1:$ctl_port\"#" \
    -e 's#^window = "2s"#window = "1s"#' config/example.toml >"$work/config.toml"
grep -q "listen = \"127.0.0.1:$ctl_port\"" "$work/config.toml" || fail "could not set [server] listen in the copy of config/example.toml"
chmod 0644 "$work/config.toml" "$work/resolv.conf" 2>/dev/null || true

say "podman run --network host (controller on 127.0.0.1:$ctl_port, sim on 127.0.0.1:$sim_port)"
timeout 60 "${podman_[@]}" run -d --name "$container" --network host \
  --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 --health-interval disable \
  "${name_args[@]}" -v "$work/config.toml:/etc/throttle-governor/config.toml:ro" \
  "$IMAGE" >"$work/podman-run.log" 2>&1 || { cat "$work/podman-run.log" >&2; fail "podman run"; }

wait_http "http://127.0.0.1:$ctl_port/healthz" 30
say "/healthz: $(curl -fsS --max-time 2 "http://127.0.0.1:$ctl_port/healthz")"

# It must govern: a valid signal, and its writes taking effect at the sim.
deadline=$((SECONDS + 30))
until metrics=$(curl -fsS --max-time 2 "http://127.0.0.1:$ctl_port/metrics") \
  && grep -q '^throttle_signal_up{target="checkout"} 1' <<<"$metrics" \
  && workers=$(curl -fsS --max-time 2 "http://127.0.0.1:$sim_port/admin/workers") \
  && workers=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["workers"])' "$workers") \
  && ((workers >= 8)); do
  ((SECONDS < deadline)) || fail "the container did not govern the sim within 30 s (sim: ${workers:-?})"
  sleep 1
done
grep -q '^throttle_build_info{version="'"$version"'"} 1' <<<"$metrics" || fail "/metrics has no throttle_build_info for $version"
say "/metrics: signal up; the sim's workers went from 1 to $workers (slow start, written by the container)"

"${podman_[@]}" healthcheck run "$container" >"$work/healthcheck.log" 2>&1 || { cat "$work/healthcheck.log" >&2; fail "the image's HEALTHCHECK failed"; }
say "HEALTHCHECK (podman healthcheck run): healthy"

pid=$("${podman_[@]}" inspect "$container" --format '{{.State.Pid}}')
proc_uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[[ $proc_uid != 0 ]] || fail "the container's process runs as root"
say "the container's process runs as uid $proc_uid"

timeout 30 "${podman_[@]}" stop -t 10 "$container" >"$work/podman-stop.log" 2>&1
status=$("${podman_[@]}" inspect "$container" --format '{{.State.ExitCode}}')
[[ $status == 0 ]] || fail "the controller exited with status $status on podman stop"
say "podman stop: exited 0"
say "all checks passed"
