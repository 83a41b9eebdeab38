#!/usr/bin/env bash
# loaded.sh [CMD...]: runs CMD (default: make test) on a busy machine: one
# busy loop per core at normal priority, as other jobs on a shared 2-core
# machine would be, stopped however CMD ends. Prints CMD's wall time and
# exit code, and exits with it. A test that passes only on an idle machine
# fails here:
#   bash integration/scripts/loaded.sh
#   bash integration/scripts/loaded.sh make integration-localstack
# LOADED_LOOPS: how many loops (default: the number of cores).
set -uo pipefail

(($#)) || set -- make test
loops="${LOADED_LOOPS:-$(nproc)}"
pids=()
stop() {
	((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	pids=()
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < loops; i++)); do
	bash -c 'while :; do :; done' &
	pids+=($!)
done
echo "loaded: $loops busy loops (pids ${pids[*]}) while: $*"
start=$SECONDS
"$@"
rc=$?
stop
echo "loaded: $* took $((SECONDS - start)) s under $loops busy loops: exit $rc"
exit "$rc"
