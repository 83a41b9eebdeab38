#!/usr/bin/env bash
# e2e-example.sh: the second application, examples/hotel (its own module,
# the construct and the runtime as a team uses them), deployed into the
# LocalStack of AWS_ENDPOINT_URL (run it under `localstack.sh run --deploy`),
# driven, then destroyed:
#   its host-arch bootstrap and the localstack profile synthesized (make -C
#   examples/hotel synth-local, with the pinned CDK CLI), cdklocal bootstrap
#   and deploy of that assembly, TestBookings (kit.Run of integration/kit,
#   through LocalStack's own event source mapping: duplicates in one
#   SendMessageBatch and in later ones, copies sent at the same moment, one
#   confirmation per booking; a key with another payload, keyless and
#   malformed bookings in the DLQ and nothing else; the EMF metrics the
#   dashboard and alarms read in the function's logs), cdklocal destroy,
#   TestNothingLeft (kit.NothingLeft).
# The stack is destroyed whether the test passes or not. Prints each step's time.
# Under `go run ./integration/cmd/release -then` (make test does so) it
# works on the release check's copy of the example, outside the repository,
# built from the modules as their tags will serve them (SQSIDEM_RELEASE_DIR,
# and the go environment that command sets): as a team would, from its own
# repository. Else on examples/hotel itself, through its replace lines.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -n "${SQSIDEM_RELEASE_DIR:-}" ]]; then
	example="$SQSIDEM_RELEASE_DIR/examples/hotel"
	echo "e2e-example: the copy $example (no replace lines; GOPROXY=$GOPROXY)"
else
	example="$root/examples/hotel"
fi
cd "$example"
[[ -n "${AWS_ENDPOINT_URL:-}" ]] || { echo "e2e-example: AWS_ENDPOINT_URL is not set (run under localstack.sh run --deploy)" >&2; exit 2; }
[[ -x "$root/node_modules/.bin/cdklocal" ]] || bash "$root/integration/scripts/install-emulators.sh" npm

# As the top-level Makefile: tooling state in the repository's cache.
export CDK_HOME="$root/.cache/cdk-home" CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
export GOWORK=off # the example is a module of its own, not one of go.work's
export AWSCDK="$root/node_modules/.bin/cdk" # the pinned CLI, for the example's Makefile
export SQSIDEM_KIT_RECORD="$root/.cache/e2e/hotel.json" # kit.EnvRecord: what TestBookings saw, for TestNothingLeft
cdklocal=("$root/node_modules/.bin/cdklocal" --no-notices --app build/local/cdk.out)
testbin="$root/.cache/e2e/hotel-e2e.test"

step() { # step NAME CMD...: run CMD, print how long it took, return its status
	local name=$1 t0=$SECONDS rc=0
	shift
	echo "e2e-example: $name"
	"$@" || rc=$? # called as `step ... || rc=$?`, where set -e does not apply
	echo "e2e-example: $name took $((SECONDS - t0)) s"
	return "$rc"
}
destroy() { step destroy "${cdklocal[@]}" destroy --all --force; }

rm -f "$SQSIDEM_KIT_RECORD"
t0=$SECONDS
# The synth (mostly `go run ./infra`) runs while LocalStack bootstraps the
# environment (named, so that the bootstrap needs no app) and the test
# compiles.
synthlog="$root/.cache/e2e/hotel-synth.log"
mkdir -p "$(dirname "$synthlog")"
step "build and synth" make --no-print-directory synth-local >"$synthlog" 2>&1 &
synth=$!
rc=0
step "compile the test" go test -c -tags e2e -o "$testbin" . || rc=$?
((rc == 0)) && { (cd "$root/.cache" && step bootstrap "${cdklocal[0]}" --no-notices bootstrap aws://000000000000/us-east-1) || rc=$?; }
wait "$synth" || rc=$?
cat "$synthlog"
((rc == 0)) || exit "$rc"
step deploy "${cdklocal[@]}" deploy --all --require-approval never || rc=$?
if ((rc == 0)); then
	step drive "$testbin" -test.count=1 -test.timeout=8m -test.v -test.run '^TestBookings$' || rc=$?
fi
destroy || rc=$?
# TestBookings recorded what the stack held.
if [[ -f "$SQSIDEM_KIT_RECORD" ]]; then
	step "check nothing is left" "$testbin" -test.count=1 -test.timeout=2m -test.v -test.run '^TestNothingLeft$' || rc=$?
fi
echo "e2e-example: $((SECONDS - t0)) s in all"
exit "$rc"
