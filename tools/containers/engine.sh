# Sourced by check.sh: a Docker engine of the check's own, beside anything the machine runs. Its data, exec root
# and socket live under $CONTAINERS_DIR; it changes no firewall or forwarding, and publishes ports on loopback only.
# Call start_engine once and stop_engine from the EXIT trap; engine_leftovers lists what outlived it.

ENGINE_DIR="$CONTAINERS_DIR/engine"
# containerd's sockets live under the exec root: keep it short, whatever the checkout's path.
ENGINE_EXEC_ROOT="/run/lampline-engine-$$"
ENGINE_SOCKET="$ENGINE_DIR/docker.sock"
ENGINE_BRIDGE=docker0
ENGINE_PID=""
BRIDGE_WAS_THERE=false

start_engine() {
  mkdir -p "$ENGINE_DIR/data"
  ip link show "$ENGINE_BRIDGE" >/dev/null 2>&1 && BRIDGE_WAS_THERE=true
  dockerd \
    --data-root "$ENGINE_DIR/data" \
    --exec-root "$ENGINE_EXEC_ROOT" \
    --pidfile "$ENGINE_DIR/dockerd.pid" \
    --host "unix://$ENGINE_SOCKET" \
    --iptables=false --ip-forward=false --ip-masq=false --ip6tables=false \
    --ip 127.0.0.1 \
    >"$ENGINE_DIR/dockerd.log" 2>&1 &
  ENGINE_PID=$!
  export DOCKER_HOST="unix://$ENGINE_SOCKET"
  for _ in $(seq 1 60); do
    docker version >/dev/null 2>&1 && return 0
    kill -0 "$ENGINE_PID" 2>/dev/null || break
    sleep 0.5
  done
  echo "dockerd did not answer on $ENGINE_SOCKET; its log:" >&2
  tail -20 "$ENGINE_DIR/dockerd.log" >&2
  return 1
}

stop_engine() {
  [ -n "$ENGINE_PID" ] || return 0
  if kill -0 "$ENGINE_PID" 2>/dev/null; then
    # Containers first, so no shim outlives the engine; then the engine, which stops its containerd.
    local running
    running=$(docker ps -q 2>/dev/null || true)
    [ -z "$running" ] || docker rm -f $running >/dev/null 2>&1 || true
    kill -TERM "$ENGINE_PID"
    for _ in $(seq 1 60); do
      kill -0 "$ENGINE_PID" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$ENGINE_PID" 2>/dev/null && kill -KILL "$ENGINE_PID"
  fi
  wait "$ENGINE_PID" 2>/dev/null || true
  ENGINE_PID=""
  # The engine leaves its default bridge and its network namespace mounts behind when it stops.
  if [ "$BRIDGE_WAS_THERE" = false ] && ip link show "$ENGINE_BRIDGE" >/dev/null 2>&1; then
    ip link delete "$ENGINE_BRIDGE" || true
  fi
  if [ -d "$ENGINE_EXEC_ROOT" ]; then
    grep -o " $ENGINE_EXEC_ROOT[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$ENGINE_EXEC_ROOT"
  fi
  grep -o " $ENGINE_DIR/data[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
}

# What the engine left running or mounted: empty when the machine is as the check found it.
engine_leftovers() {
  pgrep -a -f -- "$ENGINE_EXEC_ROOT|$ENGINE_DIR" || true
  grep -e " $ENGINE_EXEC_ROOT" -e " $ENGINE_DIR" /proc/mounts || true
  [ "$BRIDGE_WAS_THERE" = true ] || ip -br link show "$ENGINE_BRIDGE" 2>/dev/null || true
  ip -br link show type bridge 2>/dev/null | grep -E '^br-' || true
  ip -br link show type veth 2>/dev/null || true
}
