#!/usr/bin/env bash
# e2e-example.sh [EXAMPLE...]: the examples (default: every examples/*/
# with an e2e_test.go), each proved on the LocalStack of AWS_ENDPOINT_URL
# (run it under `localstack.sh run --deploy`) by its own `make prove` —
# `go tool onlocalstack` of integration/kit: the synth with the
# construct's LocalStack preset (its consumer built for this machine with
# the fault switches), deploy, the kit's scenarios (e2e_test.go), destroy,
# nothing left — the way a team runs it in its own repository. The
# examples run side by side, each with its log; the logs are printed at
# the end, with each one's time and outcome.
# Under `go run ./integration/cmd/release -then` (make test does so) it
# works on the release check's copies of the examples, outside the
# repository, built from the modules as their tags will serve them
# (SQSIDEM_RELEASE_DIR, and the go environment that command sets). Else on
# examples/* themselves, through their replace lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
base="$root/examples"
if [[ -n "${SQSIDEM_RELEASE_DIR:-}" ]]; then
	base="$SQSIDEM_RELEASE_DIR/examples"
	echo "e2e-example: the copies in $base (no replace lines; GOPROXY=$GOPROXY)"
fi
[[ -n "${AWS_ENDPOINT_URL:-}" ]] || { echo "e2e-example: AWS_ENDPOINT_URL is not set (run under localstack.sh run --deploy)" >&2; exit 2; }
[[ -x "$root/node_modules/.bin/cdklocal" ]] || bash "$root/integration/scripts/install-emulators.sh" npm

# As the top-level Makefile: tooling state in the repository's cache, the
# repository's pinned Node tools.
export SQSIDEM_CACHE="$root/.cache" SQSIDEM_NODE_MODULES="$root/node_modules"
export GOWORK=off # each example is a module of its own, not one of go.work's
logs="$root/.cache/e2e"
mkdir -p "$logs"

examples=("$@")
if ((${#examples[@]} == 0)); then
	for f in "$base"/*/e2e_test.go; do examples+=("$(basename "$(dirname "$f")")"); done
fi
# Bootstrapped once, before they run side by side: two bootstraps of an
# environment at the same moment race for the same CDKToolkit stack.
(cd "$logs" && "$root/node_modules/.bin/cdklocal" --no-notices bootstrap aws://000000000000/us-east-1 >"$logs/bootstrap.log" 2>&1) ||
	{ cat "$logs/bootstrap.log"; exit 1; }
declare -A pid
for ex in "${examples[@]}"; do
	(
		t0=$SECONDS rc=0
		make --no-print-directory -C "$base/$ex" prove || rc=$?
		echo "e2e-example: $ex: exit $rc in $((SECONDS - t0)) s"
		exit "$rc"
	) >"$logs/$ex.log" 2>&1 &
	pid[$ex]=$!
done
rc=0
for ex in "${examples[@]}"; do
	erc=0
	wait "${pid[$ex]}" || erc=$?
	echo "---- examples/$ex ($logs/$ex.log) ----"
	cat "$logs/$ex.log"
	((erc == 0)) || { echo "e2e-example: examples/$ex FAILED (exit $erc)"; rc=1; }
done
exit "$rc"
