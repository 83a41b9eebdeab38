#!/usr/bin/env bash
# alongside.sh LOG CMD... -- CMD2...: CMD in the background, its output
# to LOG, and CMD2 in the foreground; then it waits for CMD, prints LOG and
# fails when either failed. `make test` runs the simulator and the CDK
# tests alongside the suite on the emulators, and the fork rehearsal and
# the chaos run alongside LocalStack: both mostly wait for redeliveries.
set -uo pipefail

log=$1
shift
bg=()
while [[ $# -gt 0 && "$1" != "--" ]]; do bg+=("$1"); shift; done
[[ "${1:-}" == "--" && ${#bg[@]} -gt 0 && $# -gt 1 ]] || { echo "usage: alongside.sh LOG CMD... -- CMD2..." >&2; exit 2; }
shift

mkdir -p "$(dirname "$log")"
"${bg[@]}" >"$log" 2>&1 &
pid=$!
rc=0
"$@" || rc=$?
bgrc=0
wait "$pid" || bgrc=$?
echo "---- ${bg[*]} (alongside; its log, $log) ----"
cat "$log"
[[ $bgrc == 0 ]] || echo "alongside: ${bg[*]} failed (exit $bgrc)"
[[ $rc == 0 && $bgrc == 0 ]]
