#!/usr/bin/env bash
# Build the Docker image on a machine with no container registry, run it, and check that it
# serves: /health, one chat turn against the echo model, the healthcheck, a non-root user, the
# state volume, a clean stop, and the refusal to run open without the explicit opt-in.
#
#   scripts/docker-smoke.sh                       # as root: installs docker.io/debootstrap if needed
#   scripts/docker-smoke.sh --skip-if-unavailable # CI: no Docker daemon possible -> say why, exit 0
#
# The base image is a Debian bookworm root filesystem (debootstrap --variant=minbase, with
# python3 and python3-venv) imported with `docker import` and kept as $BASE_IMAGE, so reruns
# skip it. Wheels are built outside the container (`pip wheel`) and the build installs from
# them alone. Everything runs with --network host: no bridge network, no registry.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=${HERMES_SMOKE_IMAGE:-hermes-agent:smoke}
BASE_IMAGE=${HERMES_SMOKE_BASE:-hermes-base:bookworm-2}
SUITE=bookworm
CACHE=${HERMES_SMOKE_CACHE:-/var/cache/hermes-docker}
PYTHON=${PYTHON:-python3}
SKIP_IF_UNAVAILABLE=0
[ "${1:-}" = "--skip-if-unavailable" ] && SKIP_IF_UNAVAILABLE=1

START=$(date +%s)
log() { printf '[docker-smoke +%ss] %s\n' "$(($(date +%s) - START))" "$*"; }
die() { log "FAILED: $*"; exit 1; }
unavailable() {
    if [ "$SKIP_IF_UNAVAILABLE" = 1 ]; then
        log "skipped: $*"
        exit 0
    fi
    die "$*"
}

STARTED_DOCKERD= FAKE_PID= CONTAINER= WORK=
cleanup() {
    set +e  # best effort: every step runs whatever the one before it returned
    if [ -n "$CONTAINER" ]; then docker rm -f -v "$CONTAINER" >/dev/null 2>&1; fi
    if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; fi
    if [ -n "$WORK" ]; then rm -rf "$WORK"; fi
    if [ -n "$STARTED_DOCKERD" ]; then
        kill "$STARTED_DOCKERD" 2>/dev/null
        for _ in $(seq 1 150); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.1; done
    fi
    return 0
}
trap cleanup EXIT

ensure_tools() {
    local missing=()
    command -v docker >/dev/null || missing+=(docker.io)
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ ${#missing[@]} = 0 ] && return 0
    [ "$(id -u)" = 0 ] || unavailable "needs ${missing[*]} (apt-get install) and is not root"
    log "installing ${missing[*]} from Debian"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        "${missing[@]}"; } >"$CACHE/apt.log" 2>&1 \
        || unavailable "apt-get install ${missing[*]} failed (see $CACHE/apt.log)"
}

ensure_daemon() {
    docker info >/dev/null 2>&1 && { log "using the running Docker daemon"; return 0; }
    [ "$(id -u)" = 0 ] || unavailable "no Docker daemon is running and starting one needs root"
    log "starting dockerd (--bridge=none: containers use the host network only)"
    dockerd --bridge=none --iptables=false --ip6tables=false >"$CACHE/dockerd.log" 2>&1 &
    STARTED_DOCKERD=$!
    for _ in $(seq 1 300); do
        docker info >/dev/null 2>&1 && return 0
        kill -0 "$STARTED_DOCKERD" 2>/dev/null || break
        sleep 0.1
    done
    STARTED_DOCKERD=
    unavailable "dockerd could not start here: $(tail -n 1 "$CACHE/dockerd.log")"
}

# The Debian mirror apt already uses (debootstrap must reach the same one).
debian_mirror() {
    if [ -n "${HERMES_DEBIAN_MIRROR:-}" ]; then echo "$HERMES_DEBIAN_MIRROR"; return; fi
    local url
    url=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
            2>/dev/null | grep -Eo 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 \
            | tr -d ' ')
    echo "${url:-http://deb.debian.org/debian}"
}

ensure_base() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "base image $BASE_IMAGE is cached"
        return 0
    fi
    local mirror rootfs
    mirror=$(debian_mirror)
    rootfs="$WORK/rootfs"
    log "debootstrap --variant=minbase $SUITE from $mirror (once; cached as $BASE_IMAGE)"
    debootstrap --variant=minbase --include=python3,python3-venv "$SUITE" "$rootfs" "$mirror" \
        >"$CACHE/debootstrap.log" 2>&1 || die "debootstrap failed (see $CACHE/debootstrap.log)"
    rm -rf "$rootfs"/usr/share/{doc,man,info,locale}/* "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/log/*.log
    tar -C "$rootfs" --numeric-owner -c . \
        | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    log "imported $BASE_IMAGE"
}

build_image() {
    local ctx="$WORK/context"
    mkdir -p "$ctx"
    # The project as committed (plus new files not ignored), never .venv or caches.
    git -C "$ROOT" ls-files -co --exclude-standard -z \
        | tar -C "$ROOT" --null -T - --ignore-failed-read -c 2>/dev/null | tar -C "$ctx" -x
    "$PYTHON" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        >"$WORK/requirements.txt"
    echo hatchling >>"$WORK/requirements.txt"
    # Wheels are kept per dependency list: reruns reuse them until pyproject.toml changes.
    local key wheels
    key=$( (cat "$WORK/requirements.txt"; "$PYTHON" -V) | sha256sum | cut -c1-16)
    wheels="$CACHE/wheelhouse-$key"
    if [ ! -d "$wheels" ]; then
        log "building wheels outside the container (pip wheel: dependencies and hatchling)"
        rm -rf "$CACHE"/wheelhouse-*
        "$PYTHON" -m pip wheel -q --disable-pip-version-check --wheel-dir "$wheels.tmp" \
            -r "$WORK/requirements.txt" >"$CACHE/wheel.log" 2>&1 \
            || die "pip wheel failed (see $CACHE/wheel.log)"
        mv "$wheels.tmp" "$wheels"
    else
        log "wheels for these dependencies are cached"
    fi
    cp -a "$wheels" "$ctx/wheelhouse"
    log "docker build --network host (BASE=$BASE_IMAGE, $(ls "$ctx/wheelhouse" | wc -l) wheels)"
    local args=(--network host --build-arg "BASE=$BASE_IMAGE" --build-arg WHEELHOUSE=wheelhouse)
    # The build stage gets a tag too: its layers are the cache that makes reruns fast.
    { DOCKER_BUILDKIT=0 docker build "${args[@]}" --target build -t "$IMAGE-build" "$ctx" \
        && DOCKER_BUILDKIT=0 docker build "${args[@]}" -t "$IMAGE" "$ctx"; } \
        >"$CACHE/build.log" 2>&1 \
        || { tail -n 20 "$CACHE/build.log"; die "docker build failed (see $CACHE/build.log)"; }
    # Earlier builds' images (replaced by these tags) are dangling now: only ours go.
    docker image prune -f --filter label=org.opencontainers.image.title=hermes-agent-server \
        >/dev/null
    local size
    size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
    log "image $IMAGE: $((size / 1000000)) MB"
}

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_fake_model() {
    local out="$WORK/fake.out"
    "$PYTHON" -m hermes.testing.fake_model --port 0 >"$out" 2>&1 &
    FAKE_PID=$!
    for _ in $(seq 1 100); do
        FAKE_URL=$(grep -Eo 'http://127\.0\.0\.1:[0-9]+/v1' "$out" || true)
        [ -n "$FAKE_URL" ] && { log "echo model on $FAKE_URL"; return 0; }
        sleep 0.1
    done
    die "the echo model did not start: $(cat "$out")"
}

# GET/POST against the container; prints the body, fails on a non-2xx status.
http() {
    "$PYTHON" - "$@" <<'PY'
import json, sys, urllib.request
url, body = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
req = urllib.request.Request(url, data=body.encode() if body else None, method="POST" if body else "GET")
req.add_header("Content-Type", "application/json")
req.add_header("Authorization", "Bearer hermes")
req.add_header("X-Hermes-Session-Id", "docker-smoke")
with urllib.request.urlopen(req, timeout=30) as r:
    print(r.read().decode())
PY
}

run_checks() {
    local port t0 health state
    port=$(free_port)
    # Refused without the opt-in: no server key, listening on all interfaces.
    if docker run --rm --network host -e HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=0 \
        -e "HERMES_PORT=$port" "$IMAGE" >"$WORK/refused.out" 2>&1; then
        die "the image served open on 0.0.0.0 without the opt-in"
    fi
    grep -q "refusing to listen on 0.0.0.0" "$WORK/refused.out" \
        || die "unexpected refusal text: $(cat "$WORK/refused.out")"
    log "without the opt-in the image refuses an open public bind: ok"

    # On the host network, listen on loopback only (what -p 127.0.0.1:... gives elsewhere).
    t0=$(date +%s%N)
    CONTAINER=$(docker run -d --network host --health-interval 1s --health-start-period 0s \
        -e HERMES_HOST=127.0.0.1 -e "HERMES_PORT=$port" \
        -e "OPENAI_BASE_URL=$FAKE_URL" -e HERMES_MODEL=echo "$IMAGE")
    for _ in $(seq 1 600); do
        health=$(http "http://127.0.0.1:$port/health" 2>/dev/null) && break
        [ "$(docker inspect -f '{{.State.Running}}' "$CONTAINER")" = true ] \
            || die "the container exited: $(docker logs "$CONTAINER" 2>&1 | tail -n 5)"
        sleep 0.05
    done
    [ -n "${health:-}" ] || die "no /health within 30 s: $(docker logs "$CONTAINER" 2>&1 | tail -n 5)"
    log "cold start to /health: $((($(date +%s%N) - t0) / 1000000)) ms -> $health"

    local answer
    answer=$(http "http://127.0.0.1:$port/v1/chat/completions" \
        '{"model": "hermes", "messages": [{"role": "user", "content": "hello from docker"}]}')
    echo "$answer" | grep -q 'You said: hello from docker' || die "unexpected answer: $answer"
    log "chat turn: $(echo "$answer" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])')"

    [ "$(docker exec "$CONTAINER" id -u)" = 10001 ] || die "the server does not run as uid 10001"
    docker exec "$CONTAINER" test -s /data/state.db || die "no state.db in the /data volume"
    docker inspect -f '{{range .Mounts}}{{.Destination}} {{end}}' "$CONTAINER" | grep -q /data \
        || die "/data is not a volume"
    log "runs as uid 10001; state in the /data volume: ok"
    for _ in $(seq 1 100); do
        state=$(docker inspect -f '{{.State.Health.Status}}' "$CONTAINER")
        [ "$state" = healthy ] && break
        sleep 0.1
    done
    [ "$state" = healthy ] || die "the healthcheck says $state"
    log "HEALTHCHECK: healthy"

    t0=$(date +%s%N)
    docker stop -t 20 "$CONTAINER" >/dev/null
    [ "$(docker inspect -f '{{.State.ExitCode}}' "$CONTAINER")" = 0 ] \
        || die "docker stop: exit code $(docker inspect -f '{{.State.ExitCode}}' "$CONTAINER")"
    log "docker stop: clean exit in $((($(date +%s%N) - t0) / 1000000)) ms"
}

mkdir -p "$CACHE"
cd "$ROOT"
WORK=$(mktemp -d -t hermes-docker-smoke.XXXXXX)
ensure_tools
ensure_daemon
"$PYTHON" -c 'import hermes' 2>/dev/null \
    || die "$PYTHON cannot import hermes: activate the project's venv (pip install -e .) first"
ensure_base
build_image
start_fake_model
run_checks
log "OK"
