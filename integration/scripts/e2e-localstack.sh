#!/usr/bin/env bash
# e2e-localstack.sh: the real stack, deployed into the LocalStack of
# AWS_ENDPOINT_URL (run it under `localstack.sh run --deploy`), driven, then
# destroyed:
#   cdklocal bootstrap and deploy of the localstack profile as `make
#   synth-localstack` synthesized it (cdk.localstack.out, host-arch bootstraps
#   from build/local), TestDeployedStack (duplicates through LocalStack's own
#   event source mapping), TestIdemctlDeployed, TestKit (integration/kit's
#   scenarios), cdklocal destroy, TestNothingLeft.
# The stack is destroyed whether the test passes or not. Prints each step's time.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
[[ -n "${AWS_ENDPOINT_URL:-}" ]] || { echo "e2e-localstack: AWS_ENDPOINT_URL is not set (run under localstack.sh run --deploy)" >&2; exit 2; }

cdklocal="$root/node_modules/.bin/cdklocal"
assembly=cdk.localstack.out
[[ -f "$assembly/manifest.json" ]] || { echo "e2e-localstack: no $assembly/manifest.json (make synth-localstack)" >&2; exit 2; }
# Bootstrap, deploy and destroy read the assembly (--app) rather than run
# the app again; the test finds the stack's name and template there too.
app=(--app "$assembly")
export SQSIDEM_ASSEMBLY="$root/$assembly"
# What TestKit's kit.Run records of the stack, for TestNothingLeft: this
# run's only (kit.EnvRecord).
export SQSIDEM_KIT_RECORD="$root/.cache/e2e/kit-template.json"
rm -f "$SQSIDEM_KIT_RECORD"

step() { # step NAME CMD...: run CMD, print how long it took, return its status
	local name=$1 t0=$SECONDS st=0
	shift
	echo "e2e-localstack: $name"
	"$@" || st=$?
	echo "e2e-localstack: $name took $((SECONDS - t0)) s (exit $st)"
	return "$st"
}
destroy() { step destroy "$cdklocal" destroy --no-notices --all --force "${app[@]}"; }

step bootstrap "$cdklocal" bootstrap --no-notices "${app[@]}"
step deploy "$cdklocal" deploy --no-notices --all --require-approval never "${app[@]}"
rc=0
step drive go test -tags e2e -count=1 -timeout 10m -v -run '^TestDeployedStack$' ./integration/e2e/ || rc=$?
# The operator CLI against the same deployed stack (before the destroy).
step idemctl go test -tags e2e -count=1 -timeout 10m -v -run '^TestIdemctlDeployed$' ./integration/e2e/ || rc=$?
# The kit a team runs against its own stack (integration/kit), against this one.
step kit go test -tags e2e -count=1 -timeout 10m -v -run '^TestKit$' ./integration/e2e/ || rc=$?
destroy || rc=$?
step "check nothing is left" go test -tags e2e -count=1 -timeout 3m -v -run '^TestNothingLeft$' ./integration/e2e/ || rc=$?
exit "$rc"
