#!/usr/bin/env bash
# fork-rehearsal.sh [FORK...]: the forking checklist (docs/template.md,
# "Using it as a template"), performed literally on a scratch copy of the
# repository per fork, with the effects a team would write kept in
# integration/fork/testdata/<FORK>/ (default: all three):
#
#   notices  payment notices to a partner: key paymentId, reconciled by a
#            lookup, policy retry: exactly once
#   psp      payment captures at a PSP: key orderId in the body, no lookup
#            (no Reconcile), policy hold: at most once
#   webhook  order events to a customer's endpoint: key eventId, no
#            lookup, policy retry: at least once
#
# Each fork changes the checklist's files only (the effect package,
# contract.go, infra/config.go's names, mode and policy, from its
# fork.sh), then the proof runs on the result: the unit tests, the synth
# checks (the test profile; the production profile refused without the
# required setting, synthesized with it; cdk-nag and the stack's tests run
# in the unit tests) and the emulator scenarios, once, in the fork's
# configuration, each checking the guarantee the fork's consumer says it
# keeps. Prints each fork's diff size and each step's time. The checklist
# is these steps: when one of them no longer applies, this fails.
#
# The forks run at once, each in its own copy with its own emulators
# (FORK_JOBS at a time, default all); of their scenario steps, which load
# the machine most (a thousand messages each), FORK_SCENARIO_JOBS run at
# a time (default 2), taken in the list's order (the longest first), each
# with go test -parallel FORK_PARALLEL (default 4, the emulator tier's):
# most of a fork's time is its scenarios waiting for visibility timeouts.
# A fork's scenarios start once its test profile is synthesized; its unit
# tests, CDK tests and production synth run beside them at nice 10 (idle,
# 2 cores, the forks' own packages not in the test cache: 313 s for the
# three with every step of a fork one after the other, 200 s so;
# 2026-12-02). Each fork's output goes to
# FORK_DIR/<FORK>.log, printed whole once it ends, in order. The copies
# share this checkout's Go build and module caches, node_modules and the
# emulators under .cache, so each compiles only what its fork changed.
# FORK_DIR (default .cache/fork-rehearsal) is the scratch directory.
set -euo pipefail
# The scenarios run on the emulators, whatever endpoint the caller has
# (make test runs this beside LocalStack).
unset AWS_ENDPOINT_URL

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
forks_dir="$root/integration/fork/testdata"
base="${FORK_DIR:-$root/.cache/fork-rehearsal}"
# The longest scenarios first (they take the first slots): psp's (its
# held keys settled by the operator, then redriven; 170 s idle), webhook's
# (100 s), notices' (80 s).
all=(psp webhook notices)
forks=("$@")
((${#forks[@]})) || forks=("${all[@]}")
jobs="${FORK_JOBS:-${#forks[@]}}"
scenario_jobs="${FORK_SCENARIO_JOBS:-2}"
parallel="${FORK_PARALLEL:-4}"
t0=$SECONDS

# slot CMD...: runs CMD holding one of scenario_jobs slots (a lock file
# each under base), waiting for one to be free, and for the forks before
# this one (rehearse's ticket: its place in the list) to have taken theirs
# or ended (claimed): the slots go in the list's order, the longest
# scenarios first.
slot() {
	local i fd rc
	while ((ticket > 0)) && [[ ! -e "$base/.claimed.$((ticket - 1))" ]]; do sleep 1; done
	while :; do
		for ((i = 0; i < scenario_jobs; i++)); do
			exec {fd}>"$base/.scenario-slot.$i"
			if flock -n "$fd"; then
				claimed
				rc=0
				"$@" || rc=$?
				exec {fd}>&-
				return "$rc"
			fi
			exec {fd}>&-
		done
		sleep 1
	done
}

# claimed: this fork's turn for a slot is over (it took one, or ended).
claimed() { touch "$base/.claimed.$ticket"; }

say() { echo "fork-rehearsal: $*"; }

# rehearse FORK: the checklist and the proof for one fork, in its own
# copy; its output goes to the caller.
rehearse() {
	local name=$1 testdata="$forks_dir/$1" fork="$base/$1" start=$SECONDS
	ticket=$2 # global: the EXIT trap runs after rehearse has returned
	trap claimed EXIT
	local desc stack namespace mode unknown setting setting_env example remote
	say() { echo "fork-rehearsal: $name: $*"; }
	die() {
		echo "fork-rehearsal: $name: FAILED: $*" >&2
		exit 1
	}
	step() { # step NAME CMD...: run CMD in the fork and print how long it took
		local what=$1 t=$SECONDS
		shift
		say "$what"
		(cd "$fork" && "$@") || die "$what"
		say "$what took $((SECONDS - t)) s"
	}
	# set_line FILE PREFIX NEW: the line that starts with PREFIX, which must
	# be in FILE exactly once, becomes NEW.
	set_line() {
		local file=$fork/$1
		[[ "$(grep -c -- "^$2" "$file")" == 1 ]] || die "$1 has no line '$2…': the checklist and the template disagree"
		PREFIX=$2 NEW=$3 perl -i -ne 'chomp; print((index($_, $ENV{PREFIX}) == 0 ? $ENV{NEW} : $_), "\n")' "$file"
	}
	[[ -f "$testdata/fork.sh" ]] || die "no fork $name in ${forks_dir#"$root"/} (forks: ${all[*]})"
	# shellcheck source=/dev/null
	source "$testdata/fork.sh"

	# The repository as a fork starts from it: the tracked files and the
	# new ones, not what is ignored (builds, caches).
	rm -rf "$fork"
	mkdir -p "$fork/.cache"
	(cd "$root" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -xf - -C "$fork"
	ln -sfn "$root/node_modules" "$fork/node_modules"
	for d in elasticmq m2 emu cdk-home; do
		[[ -e "$root/.cache/$d" ]] && ln -sfn "$root/.cache/$d" "$fork/.cache/$d"
	done
	git -C "$fork" init -q
	git -C "$fork" add -A
	git -C "$fork" -c user.name=fork -c user.email=fork@example.invalid commit -qm template
	say "$desc"
	say "scratch copy in ${fork#"$root"/} ($((SECONDS - start)) s)"

	# 1. The effect: the package functions/consumer/effect — effect.go
	#    (Setup, the effect and, for a remote one that can be asked, its
	#    Reconcile), probe.go (the probe the proof asks), their tests.
	for f in effect.go probe.go effect_test.go; do
		cp "$testdata/$f" "$fork/functions/consumer/effect/$f"
	done
	# 2. The key and the effect's names: functions/contract/contract.go —
	#    KeyField, the effect's variables, its tables (EffectTables) and
	#    settings (EffectSettings: the remote system's URL, required).
	cp "$testdata/contract.go" "$fork/functions/contract/contract.go"
	# 3. The app's names, mode and unknown-outcome policy: infra/config.go.
	set_line infra/config.go $'\tStackName = ' $'\tStackName = "'"$stack"'"'
	set_line infra/config.go $'\tNamespace = ' $'\tNamespace = "'"$namespace"'"'
	set_line infra/config.go $'\tMode = ' $'\tMode = consumer.'"$mode"
	set_line infra/config.go $'\tUnknownOutcome = ' $'\tUnknownOutcome = consumer.'"$unknown"

	local files
	files=$(git -C "$fork" status --porcelain | wc -l)
	echo "fork-rehearsal: the fork: $name: $files files changed, $(git -C "$fork" diff --shortstat | sed 's/^ *[0-9]* files* changed, //')"
	git -C "$fork" diff --stat | sed 's/^/  /'

	# 4. Verify: the unit tests (make unit-go: every module's, which the Go
	#    test cache answers for every package the fork did not change; and
	#    the app's CDK tests, its stack's and cdk-nag's — the construct's
	#    and the examples' CDK tests import nothing a fork changes, and
	#    make test's cdk tier runs them once), the synthesized test
	#    profile, the production profile (make synth: the pinned CDK CLI
	#    running go run ./infra) refused without the required setting and
	#    synthesized with it, and the scenarios on the emulators in the
	#    fork's configuration (those of a mode the effect lacks skip,
	#    saying so).
	#
	#    The scenarios need only the test profile's template: they start
	#    once it is synthesized, and the other checks run beside them at a
	#    lower priority (nice 10, on the CPU the scenarios leave while they
	#    wait for visibility timeouts), their output printed after the
	#    scenarios'. Either failing fails the fork.
	step "synth (test profile)" make --no-print-directory synth-test
	local checks_log="$base/$name.checks.log" checks_pid checks_rc=0 scenarios_rc=0
	(checks) >"$checks_log" 2>&1 &
	checks_pid=$!
	# The remote-effect scenario runs in the fork's own configuration (its
	# other runs prove the library's other policies, which the template's
	# suite does already).
	local others t=$SECONDS
	others=$(printf '%s\n' reconcile hold retry | grep -vx -- "$remote" | paste -sd '|')
	scenarios() {
		say "scenarios: a slot after $((SECONDS - t)) s ($scenario_jobs at a time)"
		step "scenarios on the emulators (-parallel $parallel)" "$@"
	}
	(slot scenarios bash -c 'set -o pipefail; go test -tags integration -count=1 -timeout 20m -v -parallel '"$parallel"' -run "^TestScenarios$" -skip "^TestScenarios/RemoteEffects/('"$others"')$" ./integration/ | grep -v "^=== \(RUN\|PAUSE\|CONT\)"') || scenarios_rc=$?
	wait "$checks_pid" || checks_rc=$?
	cat "$checks_log"
	((scenarios_rc == 0)) || die "the scenarios (their output above)"
	((checks_rc == 0)) || die "the unit tests, the CDK tests or the production profile's synth (their output above)"
	say "done in $((SECONDS - start)) s: $desc passes; $files files changed"
}

# checks: the fork's unit tests, its app's CDK tests and the production
# profile's synth (refused without the required setting, synthesized with
# it, with the fork's policy), at nice 10; rehearse's variables.
checks() {
	step "unit tests" nice -n 10 make --no-print-directory unit-go
	step "the app's CDK tests" nice -n 10 go test ./infra/
	local t=$SECONDS out
	say "synth (production profile) without -c $setting: refused"
	if out=$(cd "$fork" && nice -n 10 make --no-print-directory synth 2>&1); then
		die "the production profile synthesized without -c $setting"
	fi
	grep -q -- "$setting is required" <<<"$out" || {
		printf '%s\n' "$out" >&2
		die "the production profile failed, but not asking for $setting"
	}
	say "synth (production profile) without -c $setting: refused took $((SECONDS - t)) s: $(grep -o -- "$setting is required.*" <<<"$out" | head -1)"
	step "synth (production profile) with -c $setting=$example" \
		nice -n 10 make --no-print-directory synth CONTEXT="-c $setting=$example"
	grep -Eq "\"$setting_env\": *\"$example\"" "$fork/cdk.out/$stack.template.json" ||
		die "cdk.out/$stack.template.json does not set $setting_env=$example on the consumer"
	grep -Eq "\"IDEM_UNKNOWN_OUTCOME\": *\"$(tr '[:upper:]' '[:lower:]' <<<"${unknown#Unknown}")\"" "$fork/cdk.out/$stack.template.json" ||
		die "cdk.out/$stack.template.json does not give the consumer the fork's policy ($unknown)"
}

mkdir -p "$base"
say "${#forks[@]} forks (${forks[*]}), $jobs at a time, in ${base#"$root"/}"
declare -A rcs=() names=()
# reap: wait for one fork to end and record its exit code.
reap() {
	local pid rc=0
	wait -n -p pid || rc=$?
	rcs[${names[$pid]}]=$rc
}
rm -f "$base"/.claimed.*
for i in "${!forks[@]}"; do
	name=${forks[$i]}
	while ((${#names[@]} - ${#rcs[@]} >= jobs)); do reap; done
	(rehearse "$name" "$i") >"$base/$name.log" 2>&1 &
	names[$!]=$name
done
while ((${#rcs[@]} < ${#names[@]})); do reap; done
failed=()
for name in "${forks[@]}"; do
	cat "$base/$name.log"
	((rcs[$name] == 0)) || failed+=("$name")
done
if ((${#failed[@]})); then
	say "FAILED: ${failed[*]} (logs in ${base#"$root"/}/<fork>.log), in $((SECONDS - t0)) s"
	exit 1
fi
say "done in $((SECONDS - t0)) s: ${#forks[@]} forks (${forks[*]}) pass, each changing only the checklist's files"
