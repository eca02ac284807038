#!/usr/bin/env bash
# Run `make PHASE` for each PHASE given, in order, and print one timing line per phase at the end:
#
#   make test: lint          1m 02s  ok
#   make test: sanity        3m 10s  FAILED (rc 2)
#
# PHASE1+PHASE2 runs those phases side by side: the first one's output streams as it comes (a CI log never goes
# quiet for the length of a phase), each other one goes to its own log, printed whole when the group is done, so
# the CI log stays readable. Use it for phases that share no files and together keep the cores busy without
# fighting for them (a phase that mostly waits beside one that computes).
# Every phase runs even when an earlier one failed (a CI log then shows all of them); the exit status is the
# first failing phase's, so a failing phase still fails `make test`. The lines are printed on an interrupt too
# (the phases under way read "interrupted").
set -uo pipefail
make_cmd=${MAKE:-make}
names=() secs=() states=()
first_rc=0
t_all=$(date +%s)
work=$(mktemp -d)
pids=()
running=()
started=0

fmt() { printf '%dm %02ds' $(($1 / 60)) $(($1 % 60)); }

record() {  # name seconds rc
  names+=("$1"); secs+=("$2")
  if [ "$3" = 0 ]; then
    states+=("ok")
  else
    states+=("FAILED (rc $3)")
    [ "$first_rc" = 0 ] && first_rc=$3
  fi
}

summary() {
  local i
  echo
  for i in "${!names[@]}"; do
    printf 'make test: %-12s %8s  %s\n' "${names[$i]}" "$(fmt "${secs[$i]}")" "${states[$i]}"
  done
  printf 'make test: %-12s %8s  %s\n' "wall" "$(fmt $(($(date +%s) - t_all)))" \
    "$([ "$first_rc" = 0 ] && echo ok || echo "FAILED (rc $first_rc)")"
}

# shellcheck disable=SC2317  # reached through the trap below, which shellcheck does not follow
on_interrupt() {
  local p n
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for n in "${running[@]}"; do
    names+=("$n"); secs+=($(($(date +%s) - started))); states+=("interrupted")
  done
  [ "$first_rc" = 0 ] && first_rc=130
  summary
  rm -rf "$work"
  exit "$first_rc"
}
trap on_interrupt INT TERM

for group in "$@"; do
  IFS=+ read -r -a members <<< "$group"
  started=$(date +%s)
  running=("${members[@]}")
  if [ "${#members[@]}" = 1 ]; then
    $make_cmd --no-print-directory "$group"
    rc=$?
    running=()
    record "$group" $(($(date +%s) - started)) "$rc"
    continue
  fi
  pids=()
  echo "==== make ${members[0]} (side by side with: ${group//+/ }; the others' logs follow when all are done) ===="
  for i in "${!members[@]}"; do
    m=${members[$i]}
    ( s=$(date +%s)
      if [ "$i" = 0 ]; then
        $make_cmd --no-print-directory "$m" 2>&1
      else
        $make_cmd --no-print-directory "$m" > "$work/$m.log" 2>&1
      fi
      rc=$?
      echo "$rc $(($(date +%s) - s))" > "$work/$m.stat"; exit "$rc" ) &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  running=()
  for i in "${!members[@]}"; do
    m=${members[$i]}
    if [ "$i" != 0 ]; then
      echo "==== make $m (side by side with: ${group//+/ }) ===="
      cat "$work/$m.log"
    fi
    read -r rc took < "$work/$m.stat"
    record "$m" "$took" "$rc"
  done
done
summary
rm -rf "$work"
exit "$first_rc"
