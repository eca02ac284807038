#!/usr/bin/env bash
# Make sure a Docker engine answers. On a fresh Debian 12 machine (root) this installs
# Debian's docker.io and starts dockerd in the background. Prints one clear line and
# exits non-zero when it cannot, naming what is missing and how to fix it.
set -euo pipefail

log() { printf 'ensure-docker: %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "no Docker engine answers and this is not root: start dockerd yourself (sudo dockerd &) or run as root"
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing Debian's docker.io (apt-get) ..."
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null; }; then
    log "apt-get could not install docker.io: check that the Debian mirror is reachable (apt-get update), then run again"
    exit 1
  fi
fi

mkdir -p /var/log
log "starting dockerd (log: /var/log/dockerd.log) ..."
setsid nohup dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "dockerd answers"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; see the end of /var/log/dockerd.log:"
tail -n 15 /var/log/dockerd.log >&2 || true
exit 1
