#!/usr/bin/env bash
# Make sure a headless Chromium is installed (Debian package `chromium`) for the report's browser test
# (tests/integration/test_report_browser.py). Prints the browser's path; exits non-zero with one clear
# line naming what is missing and how to fix it.
set -euo pipefail

log() { printf 'ensure-chromium: %s\n' "$*" >&2; }

for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    exit 0
  fi
done

if [ "$(id -u)" != 0 ]; then
  log "no Chromium found and this is not root: install it yourself (sudo apt-get install chromium)"
  exit 1
fi

log "installing Debian's chromium (apt-get) ..."
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
  log "apt-get could not install chromium: check that the Debian mirror is reachable (apt-get update), then run again"
  exit 1
fi
command -v chromium
