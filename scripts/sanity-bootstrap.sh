#!/usr/bin/env bash
# What scripts/sanity.sh decides before ansible-test runs, kept apart so a test can run it
# (tests/unit/test_sanity_bootstrap.py). Source it, then call:
#
#   sanity_bootstrap CACHE_DIR PIP_TAG
#
# * ansible-test fetches pip's bootstrap (get-pip.py) into CACHE_DIR/get_pip_<PIP_TAG>.py unless that
#   file is there. Where an offline stand-in exists it is copied there; otherwise nothing is copied and
#   ansible-test downloads its own, as it normally does. The stand-in's path is
#   $BLUEFLEET_GETPIP_STANDIN, by default ../shared/tools/ansible-test-get-pip.py beside the checkout
#   (only the project's own machines have it).
# * PIP_CERT (the CA bundle pip uses) is exported only when the file exists and the caller has not set
#   PIP_CERT: $BLUEFLEET_PIP_CERT, by default Debian's /etc/ssl/certs/ca-certificates.crt.
#
# Prints one line per decision on stderr ("sanity: ...").

sanity_bootstrap() {
  local cache=$1 pip_tag=$2
  local here standin cert
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  standin=${BLUEFLEET_GETPIP_STANDIN:-$here/../shared/tools/ansible-test-get-pip.py}
  cert=${BLUEFLEET_PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}

  mkdir -p "$cache"
  if [ -f "$standin" ]; then
    cp "$standin" "$cache/get_pip_${pip_tag}.py"
    echo "sanity: pip bootstrap: the offline stand-in $standin" >&2
  else
    echo "sanity: pip bootstrap: ansible-test downloads its own (no stand-in at $standin)" >&2
  fi

  if [ -n "${PIP_CERT:-}" ]; then
    echo "sanity: PIP_CERT: kept as set ($PIP_CERT)" >&2
  elif [ -f "$cert" ]; then
    export PIP_CERT=$cert
    echo "sanity: PIP_CERT: $cert" >&2
  else
    echo "sanity: PIP_CERT: not set (no $cert; pip uses its own CA bundle)" >&2
  fi
}
