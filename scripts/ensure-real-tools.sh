#!/usr/bin/env bash
# Install the real programs that tests/realtools runs the modules' command lines against:
# Debian's mstflint (mstflint, mstconfig, mstfwreset, mstprivhost), perftest, ibverbs-utils,
# rdma-core, strongSwan (charon + swanctl), Open vSwitch, nftables, iproute2, ethtool and the
# ShellCheck linter. Idempotent: packages already installed are left alone. Needs root (apt-get);
# as another user it says which command to run and exits 1. Open vSwitch's service is not
# started here: the tests start their own ovsdb-server / ovs-vswitchd in a scratch directory.
set -euo pipefail

log() { printf 'ensure-real-tools: %s\n' "$*" >&2; }

PACKAGES=(mstflint perftest ibverbs-utils rdma-core strongswan-charon strongswan-swanctl charon-systemd
          libcharon-extra-plugins
          openvswitch-switch nftables iproute2 ethtool shellcheck)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" = 0 ]; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "missing Debian packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}"
  exit 1
fi

log "installing ${missing[*]} (apt-get) ..."
# policy-rc.d 101: the packages' services (charon-systemd, openvswitch-switch) are not started on install.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  made_policy=1
fi
rc=0
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null; } || rc=$?
if [ "$made_policy" = 1 ]; then
  rm -f "$policy"
fi
if [ "$rc" != 0 ]; then
  log "apt-get could not install ${missing[*]}: check that the Debian mirror is reachable (apt-get update), then run again"
  exit 1
fi
log "installed: ${missing[*]}"
