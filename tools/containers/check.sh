#!/usr/bin/env bash
# `npm run test:containers`: the Dockerfile, docker-compose.yml and the Testcontainers path, tried for real on a
# Docker engine of the check's own (tools/containers/engine.sh). Builds the project image, boots the compose stack,
# sends a voice request with lamp-sim and hears it spoken once, checks Prometheus scrapes every service and the
# Redis exporter and finds Alertmanager, runs the Testcontainers suite, and stops everything it started, whatever
# fails: exit 0 only when every step passed and nothing it started is left behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Debian's docker.io client (BuildKit built in) before any other docker on PATH.
export PATH="/usr/sbin:/usr/bin:$PATH"

CONTAINERS_DIR="$PWD/.tmp/containers"
COMPOSE_PROJECT=lampline-check
IMAGE=lampline:latest
# The files the Testcontainers suite runs: the global setup's source choice and Redis-heavy library code.
TESTCONTAINERS_FILES=(test/setup/redis-source.test.ts libs/redis/lua-script.test.ts)

log() { printf '\n== containers: %s\n' "$*"; }
started=$(date +%s)

install_missing() {
  local packages=()
  command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
  command -v docker-compose >/dev/null 2>&1 || packages+=(docker-compose)
  command -v mmdebstrap >/dev/null 2>&1 || packages+=(mmdebstrap)
  [ "${#packages[@]}" -eq 0 ] && return 0
  log "installing ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
}

compose() { docker-compose --project-name "$COMPOSE_PROJECT" --file docker-compose.yml "$@"; }

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  set +e
  if [ -n "${DOCKER_HOST:-}" ] && [ -n "$ENGINE_PID" ]; then
    [ "$status" -eq 0 ] || compose logs --no-color --tail 40 >"$CONTAINERS_DIR/compose.log" 2>&1
    compose down --volumes --remove-orphans --timeout 20 >/dev/null 2>&1
  fi
  stop_engine
  local leftovers
  leftovers=$(engine_leftovers)
  if [ -n "$leftovers" ]; then
    printf 'containers: left behind after the check:\n%s\n' "$leftovers" >&2
    status=1
  fi
  log "$([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)") in $(($(date +%s) - started)) s"
  exit "$status"
}

source tools/containers/engine.sh
source tools/containers/stand-in-images.sh
install_missing
mkdir -p "$CONTAINERS_DIR"
# One check at a time per checkout: a second would share the engine's data root and socket.
exec 9>"$CONTAINERS_DIR/lock"
flock --nonblock 9 || { echo "containers: another check is running in this checkout" >&2; exit 1; }
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting dockerd ($ENGINE_SOCKET)"
start_engine

AUTH_JWT_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
HARNESS_JWT_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export AUTH_JWT_SECRET HARNESS_JWT_SECRET

# Every service of docker-compose.yml, and the base images it and the Dockerfile name.
mapfile -t services < <(compose config --services)
mapfile -t images < <(
  { grep -E '^FROM ' deploy/Dockerfile | awk '{print $2}'; compose config | awk '$1 == "image:" {print $2}'; } |
    grep -vxF "$IMAGE" | sort -u
)
log "base images: ${images[*]}"
left_out=()
for image in "${images[@]}"; do
  ensure_image "$image" && continue
  # Grafana is not packaged by Debian: without a registry it has no stand-in, so its service is left out.
  case "$image" in grafana/*) left_out+=(grafana) ;; *) exit 1 ;; esac
  echo "grafana left out of this check: $image cannot be pulled and Debian does not package Grafana"
done
[ "${#left_out[@]}" -eq 0 ] || mapfile -t services < <(printf '%s\n' "${services[@]}" | grep -vxF -f <(printf '%s\n' "${left_out[@]}"))
# Testcontainers starts the same Redis image as compose (test/setup/redis-global-setup.ts).
ensure_image "$(node --import tsx -e 'import("./test/setup/redis-global-setup.ts").then((m) => console.log(m.REDIS_IMAGE))')"

log "building $IMAGE"
build_args=(--network host --file deploy/Dockerfile --tag "$IMAGE")
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && build_args+=(--secret "id=npm-ca,src=$NODE_EXTRA_CA_CERTS")
DOCKER_BUILDKIT=1 docker build --quiet "${build_args[@]}" . >/dev/null

log "docker-compose up: ${services[*]}"
up_started=$(date +%s)
compose up --detach --no-build "${services[@]}" >/dev/null
node --import tsx tools/containers/verify-stack.ts --project "$COMPOSE_PROJECT" --services "${services[*]}"
echo "stack verified $(($(date +%s) - up_started)) s after docker-compose up"

log "Testcontainers suite (${TESTCONTAINERS_FILES[*]})"
TESTCONTAINERS_RYUK_DISABLED=true env -u REDIS_URL npx vitest run "${TESTCONTAINERS_FILES[@]}"
