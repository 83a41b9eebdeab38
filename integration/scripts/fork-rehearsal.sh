#!/usr/bin/env bash
# fork-rehearsal.sh: the README's forking checklist ("Using it as a
# template"), performed literally on a scratch copy of the repository with
# a second effect kept in integration/fork/testdata (hotel rooms: key
# bookingId, transactional mode), then the proof on the result: the unit
# tests, the synth checks (cdk synth; cdk-nag and the stack's tests run in
# the unit tests) and the emulator scenarios, once, in the fork's mode.
# Prints the fork's diff size and each step's time. The README's checklist
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

# 1. The effect: the package functions/consumer/effect — effect.go (Setup
#    and the effect), probe.go (the probe the proof asks), their tests.
for f in effect.go probe.go effect_test.go; do
	cp "$testdata/$f" "$fork/functions/consumer/effect/$f"
done
# 2. The key and the effect's names: functions/contract/contract.go —
#    KeyField, the effect's variables, its tables (EffectTables) and
#    settings (EffectSettings).
cp "$testdata/contract.go" "$fork/functions/contract/contract.go"
# 3. The app's names and mode: infra/config.go.
set_line infra/config.go $'\tStackName = ' $'\tStackName = "HotelRooms"'
set_line infra/config.go $'\tNamespace = ' $'\tNamespace = "hotel-bookings"'
set_line infra/config.go $'\tMode = ' $'\tMode = consumer.ModeTransactional'

files=$(git -C "$fork" status --porcelain | wc -l)
say "the fork: $files files changed, $(git -C "$fork" diff --shortstat | sed 's/^ *[0-9]* files* changed, //')"
git -C "$fork" diff --stat | sed 's/^/  /'

# 4. Verify: the unit tests (the stack's and cdk-nag's included), the
#    synthesized test profile, and the scenarios on the emulators in the
#    fork's mode (those of a mode the effect lacks skip, saying so).
step "unit tests" make --no-print-directory unit
step "synth (test profile)" make --no-print-directory synth-test
step "scenarios on the emulators" bash -c 'set -o pipefail; go test -tags integration -count=1 -timeout 20m -v -parallel 4 -run "^TestScenarios$" ./integration/ | grep -v "^=== \(RUN\|PAUSE\|CONT\)"'
say "done in $((SECONDS - t0)) s: a fork with another effect, key and mode passes; $files files changed"
