#!/usr/bin/env bash
# tier-wait.sh NAME [SECONDS]: waits for the tier NAME of `make test`,
# started in the background (tier.sh), to end: until its status file
# ($TEST_LOGS/NAME.status) records an exit code, at most SECONDS (900).
# Prints its log and exits with its code; 124 when it did not end in time.
set -uo pipefail

name=${1:?usage: tier-wait.sh NAME [SECONDS]}
limit=${2:-900}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${TEST_LOGS:-$root/.cache/test}"
status="$dir/$name.status"
for ((i = 0; i < limit * 2; i++)); do
	rc="$(sed -n 's/^rc=//p' "$status" 2>/dev/null)"
	[[ -n "$rc" ]] && break
	sleep 0.5
done
echo "---- $name (started in the background; its log, $dir/$name.log) ----"
cat "$dir/$name.log" 2>/dev/null
if [[ -z "$rc" ]]; then
	echo "tier-wait: $name did not end within $limit s"
	exit 124
fi
[[ "$rc" == 0 ]] || echo "tier-wait: $name failed (exit $rc)"
exit "$rc"
