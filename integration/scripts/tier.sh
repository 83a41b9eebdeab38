#!/usr/bin/env bash
# tier.sh [--quiet] NAME CMD...: runs CMD as the tier NAME of `make test`:
# its output (stdout and stderr) also goes to $TEST_LOGS/NAME.log (default
# .cache/test), and NAME.status records its exit code, when it started and
# ended, and the tier it ran inside (TEST_TIER, which CMD inherits as NAME),
# for summary.sh. The exit code is CMD's.
#
# The outermost tier shows the output without go test -v's "=== RUN",
# "=== PAUSE" and "=== CONT" lines; every log keeps them, since they say
# which test printed each line. --quiet: the log only, nothing on the console
# (for a tier run in the background, whose log is shown afterwards).
set -uo pipefail

quiet=0
if [[ "${1:-}" == --quiet ]]; then
	quiet=1
	shift
fi
[[ $# -ge 2 && "$1" =~ ^[A-Za-z0-9_.-]+$ ]] || {
	echo "usage: tier.sh [--quiet] NAME CMD..." >&2
	exit 2
}
name=$1
shift

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${TEST_LOGS:-$root/.cache/test}"
mkdir -p "$dir"
log="$dir/$name.log"
status="$dir/$name.status"
parent="${TEST_TIER:-}"
start="${EPOCHREALTIME/,/.}"
rm -f "$status"
# A tier that never ends (killed, interrupted) leaves this: summary.sh says so.
printf 'start=%s\nparent=%s\n' "$start" "$parent" >"$status"

export TEST_TIER="$name"
if ((quiet)); then
	"$@" >"$log" 2>&1
	rc=$?
elif [[ -n "$parent" ]]; then
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
else
	"$@" 2>&1 | tee "$log" | grep --line-buffered -v '^=== \(RUN\|PAUSE\|CONT\) '
	rc=${PIPESTATUS[0]}
fi
printf 'start=%s\nend=%s\nrc=%s\nparent=%s\n' "$start" "${EPOCHREALTIME/,/.}" "$rc" "$parent" >"$status"
exit "$rc"
