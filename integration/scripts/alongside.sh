#!/usr/bin/env bash
# alongside.sh LOG CMD... -- CMD2...: CMD in the background, its output
# to LOG, and CMD2 in the foreground; then it waits for CMD, prints LOG and
# fails when either failed. `make test` runs the simulator and the CDK
# tests alongside the suite on the emulators, and the fork rehearsal and
# the chaos run alongside LocalStack: both mostly wait for redeliveries.
# Once CMD2 has ended, CMD and what it started run at this script's own
# priority again (a CMD under nice had the CPU CMD2 left; now nothing is
# left to yield to): on a loaded machine the simulator's chain no longer
# holds the next phase back for its nice. (Raising a priority needs root;
# without it CMD keeps its nice.)
set -uo pipefail

# tree PID: PID and every process below it.
tree() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do tree "$c"; done
}

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
# Twice: a child started while the first pass ran inherits the old nice.
own=$(ps -o ni= -p $$ | tr -d ' ')
for _ in 1 2; do
	# shellcheck disable=SC2046 # one argument per pid
	renice -n "${own:-0}" -p $(tree "$pid") >/dev/null 2>&1 || true
done
bgrc=0
wait "$pid" || bgrc=$?
echo "---- ${bg[*]} (alongside; its log, $log) ----"
cat "$log"
[[ $bgrc == 0 ]] || echo "alongside: ${bg[*]} failed (exit $bgrc)"
[[ $rc == 0 && $bgrc == 0 ]]
