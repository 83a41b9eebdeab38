#!/usr/bin/env bash
# fork-rehearsal.sh: the forking checklist (docs/template.md, "Using it as a
# template"), performed literally on a scratch copy of the repository with
# a second effect kept in integration/fork/testdata (payment notices: key
# paymentId, lease mode, a remote effect: an HTTP call to a payment partner
# with an Idempotency-Key, reconciled by a lookup, its URL a required
# setting), then the proof on the result: the unit tests, the synth checks
# (the test profile; the production profile refused without the required
# setting, synthesized with it; cdk-nag and the stack's tests run in the
# unit tests) and the emulator scenarios, once, in the fork's mode.
# Prints the fork's diff size and each step's time. The checklist
# is these steps: when one of them no longer applies, this fails.
#
# The copy shares this checkout's Go build and module caches, node_modules
# and the emulators under .cache, so it compiles only what the fork changed.
# FORK_DIR (default .cache/fork-rehearsal) is the scratch directory.
set -euo pipefail
# The scenarios run on the emulators, whatever endpoint the caller has
# (make test runs this beside LocalStack).
unset AWS_ENDPOINT_URL

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
testdata="$root/integration/fork/testdata"
fork="${FORK_DIR:-$root/.cache/fork-rehearsal}"
# The fork's required setting (contract.EffectSettings): its -c name, the
# variable it sets and a value.
setting=partnerUrl setting_env=PARTNER_URL example=https://payments.example/notify
t0=$SECONDS

say() { echo "fork-rehearsal: $*"; }
die() { echo "fork-rehearsal: FAILED: $*" >&2; exit 1; }
step() { # step NAME CMD...: run CMD in the fork and print how long it took
	local name=$1 t=$SECONDS
	shift
	say "$name"
	(cd "$fork" && "$@") || die "$name"
	say "$name took $((SECONDS - t)) s"
}
# set FILE PREFIX NEW: the line that starts with PREFIX, which must be in
# FILE exactly once, becomes NEW.
set_line() {
	local file=$fork/$1
	[[ "$(grep -c -- "^$2" "$file")" == 1 ]] || die "$1 has no line '$2…': the checklist and the template disagree"
	PREFIX=$2 NEW=$3 perl -i -ne 'chomp; print((index($_, $ENV{PREFIX}) == 0 ? $ENV{NEW} : $_), "\n")' "$file"
}

# The repository as a fork starts from it: the tracked files and the new
# ones, not what is ignored (builds, caches).
rm -rf "$fork"
mkdir -p "$fork/.cache"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -xf - -C "$fork"
ln -s "$root/node_modules" "$fork/node_modules"
for d in elasticmq m2 emu cdk-home; do
	[[ -e "$root/.cache/$d" ]] && ln -s "$root/.cache/$d" "$fork/.cache/$d"
done
git -C "$fork" init -q
git -C "$fork" add -A
git -C "$fork" -c user.name=fork -c user.email=fork@example.invalid commit -qm template
say "scratch copy in ${fork#"$root"/} ($((SECONDS - t0)) s)"

# 1. The effect: the package functions/consumer/effect — effect.go (Setup,
#    the effect and, for a remote one, its Reconcile), probe.go (the probe
#    the proof asks), their tests.
for f in effect.go probe.go effect_test.go; do
	cp "$testdata/$f" "$fork/functions/consumer/effect/$f"
done
# 2. The key and the effect's names: functions/contract/contract.go —
#    KeyField, the effect's variables, its tables (EffectTables: none
#    here) and settings (EffectSettings: the partner's URL, required).
cp "$testdata/contract.go" "$fork/functions/contract/contract.go"
# 3. The app's names and mode: infra/config.go.
set_line infra/config.go $'\tStackName = ' $'\tStackName = "PaymentNotices"'
set_line infra/config.go $'\tNamespace = ' $'\tNamespace = "payment-notices"'
set_line infra/config.go $'\tMode = ' $'\tMode = consumer.ModeLease'

files=$(git -C "$fork" status --porcelain | wc -l)
say "the fork: $files files changed, $(git -C "$fork" diff --shortstat | sed 's/^ *[0-9]* files* changed, //')"
git -C "$fork" diff --stat | sed 's/^/  /'

# 4. Verify: the unit tests (the stack's and cdk-nag's included), the
#    synthesized test profile, the production profile (make synth: the
#    pinned CDK CLI running go run ./infra) refused without the required
#    setting and synthesized with it, and the scenarios on the emulators
#    in the fork's mode (those of a mode the effect lacks skip, saying so).
step "unit tests" make --no-print-directory unit
step "synth (test profile)" make --no-print-directory synth-test
t=$SECONDS
say "synth (production profile) without -c $setting: refused"
if out=$(cd "$fork" && make --no-print-directory synth 2>&1); then
	die "the production profile synthesized without -c $setting"
fi
grep -q -- "$setting is required" <<<"$out" || { printf '%s\n' "$out" >&2; die "the production profile failed, but not asking for $setting"; }
say "synth (production profile) without -c $setting: refused took $((SECONDS - t)) s: $(grep -o -- "$setting is required.*" <<<"$out" | head -1)"
step "synth (production profile) with -c $setting=$example" \
	make --no-print-directory synth CONTEXT="-c $setting=$example"
grep -Eq "\"$setting_env\": *\"$example\"" "$fork/cdk.out/PaymentNotices.template.json" ||
	die "cdk.out/PaymentNotices.template.json does not set $setting_env=$example on the consumer"
# (The remote-effect scenario's hold and retry runs show the policies the
# template's suite already proves; the fork's own policy, reconcile, runs.)
step "scenarios on the emulators" bash -c 'set -o pipefail; go test -tags integration -count=1 -timeout 20m -v -parallel 4 -run "^TestScenarios$" -skip "^TestScenarios/RemoteEffects/(hold|retry)$" ./integration/ | grep -v "^=== \(RUN\|PAUSE\|CONT\)"'
say "done in $((SECONDS - t0)) s: a fork with a remote effect, another key and a required setting passes; $files files changed"
