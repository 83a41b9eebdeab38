#!/usr/bin/env bash
# summary.sh [DIR [EXIT]]: the end of `make test`: the wall time of each
# tier, then each failed test with its tier, its first message and the log
# that holds the rest (integration/internal/testsummary), read from what
# integration/scripts/tier.sh left in DIR (default $TEST_LOGS, else
# .cache/test). EXIT is make's exit code. It never fails: the caller's exit
# code is the verdict.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${1:-${TEST_LOGS:-$root/.cache/test}}"
cd "$root" || exit 0
if ! go run ./integration/internal/testsummary "$dir" ${2:+"$2"}; then
	echo "summary: no summary (above: why); the tiers' logs:"
	for f in "$dir"/*.log; do [[ -e "$f" ]] && echo "  $f"; done
fi
exit 0
