#!/bin/sh
# As the official image: arguments alone (`--port 7000`) mean redis-server with them, and protected mode is off.
set -e
case "$1" in -*) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
