#!/usr/bin/env bash
# Run `make PHASE` for each PHASE given, in order, and print one timing line per phase at the end:
#
#   make test: lint         1m 02s  ok
#   make test: sanity       3m 10s  FAILED (rc 2)
#
# Every phase runs even when an earlier one failed (a CI log then shows all of them); the exit status
# is the first failing phase's, so a failing phase still fails `make test`. The lines are printed on an
# interrupt too (the interrupted phase reads "interrupted").
set -uo pipefail
make_cmd=${MAKE:-make}
names=() secs=() states=()
first_rc=0

fmt() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

summary() {
  local i total=0
  echo
  for i in "${!names[@]}"; do
    printf 'make test: %-12s %8s  %s\n' "${names[$i]}" "$(fmt "${secs[$i]}")" "${states[$i]}"
    total=$((total + secs[i]))
  done
  printf 'make test: %-12s %8s  %s\n' "total" "$(fmt "$total")" "$([ "$first_rc" = 0 ] && echo ok || echo "FAILED (rc $first_rc)")"
}

current=""
start=0
on_interrupt() {
  if [ -n "$current" ]; then
    names+=("$current"); secs+=($(($(date +%s) - start))); states+=("interrupted")
  fi
  [ "$first_rc" = 0 ] && first_rc=130
  summary
  exit "$first_rc"
}
trap on_interrupt INT TERM

for phase in "$@"; do
  current=$phase
  start=$(date +%s)
  $make_cmd --no-print-directory "$phase"
  rc=$?
  current=""
  names+=("$phase"); secs+=($(($(date +%s) - start)))
  if [ "$rc" = 0 ]; then
    states+=("ok")
  else
    states+=("FAILED (rc $rc)")
    [ "$first_rc" = 0 ] && first_rc=$rc
  fi
done
summary
exit "$first_rc"
