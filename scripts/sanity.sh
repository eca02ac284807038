#!/usr/bin/env bash
# Run `ansible-test sanity` the way it must run: from a copy of the collection under
# <tmp>/ansible_collections/bluefleet/dpu, with the ignore files empty.
# pip's bootstrap: an offline stand-in where one exists, else ansible-test downloads its own
# (scripts/sanity-bootstrap.sh decides; tests/unit/test_sanity_bootstrap.py runs it both ways).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

core_version=$("$venv/bin/python" -c 'import ansible.release as r; print(r.__version__)')
case "$core_version" in
  2.19.*) pip_tag=24_2 ;;
  *) echo "sanity: ansible-core $core_version is not the pinned 2.19.x; run make venv" >&2; exit 2 ;;
esac
# shellcheck source=scripts/sanity-bootstrap.sh
. "$root/scripts/sanity-bootstrap.sh"
sanity_bootstrap "$HOME/.ansible/test/cache" "$pip_tag"

# ansible-test skips its shellcheck test when the program is missing: install it (Debian package).
if ! command -v shellcheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null 2>&1 || \
     { [ "$(id -u)" = 0 ] && apt-get -o DPkg::Lock::Timeout=300 update -qq && apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null 2>&1; }; then
    :
  else
    echo "sanity: shellcheck is missing and could not be installed: apt-get install shellcheck" >&2; exit 2
  fi
fi

for f in "$root"/tests/sanity/ignore-*.txt; do
  [ -e "$f" ] || continue
  if [ -s "$f" ]; then
    echo "sanity: $f is not empty; fix the findings instead of ignoring them" >&2
    exit 1
  fi
done

dest="$work/ansible_collections/bluefleet/dpu"
mkdir -p "$dest"
# The collection as `ansible-galaxy collection build` would ship it: what git knows
# (tracked or new, not ignored) less galaxy.yml's build_ignore. What stays outside
# (src/, lab/, bench/) is plain Python checked by ruff in `make lint`.
ignore_re=$("$venv/bin/python" - "$root/galaxy.yml" <<'PY'
import re, sys, yaml
pats = yaml.safe_load(open(sys.argv[1])).get("build_ignore") or []
print("^(" + "|".join(re.escape(p.rstrip("/")) + "(/|$)" for p in pats) + ")" if pats else "^$^")
PY
)
(cd "$root" && git ls-files -z --cached --others --exclude-standard | \
  while IFS= read -r -d '' f; do [ -e "$f" ] && ! [[ $f =~ $ignore_re ]] && printf '%s\0' "$f"; done | \
  tar --null -T - -cf -) | tar -xf - -C "$dest"
cd "$dest"
git init -q && git add -A >/dev/null 2>&1
"$venv/bin/ansible-test" sanity --venv --python 3.11 --color no "$@"
