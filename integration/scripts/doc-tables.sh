#!/usr/bin/env bash
# doc-tables.sh [OPTIONS] [BLOCK...]: writes the figures of docs/ that a run
# printed, so that none is kept by hand. Each block of a page sits between
# the lines <!-- NAME: begin --> and <!-- NAME: end --> and is replaced
# whole: a line saying which run, when and on what machine, then what the
# run printed, verbatim. docs/tables_test.go checks that every block's
# markers are in place.
#
# BLOCK (default: all):
#   tiers       docs/testing.md    make test's time of each tier (the end of
#                                  make test, integration/internal/testsummary)
#   suite       docs/proof.md      the fault tier, the simulator's 100,000
#                                  schedules, the models replayed against the
#                                  real servers, the remote effects under retry
#   localstack  docs/localstack.md LocalStack's install and start, the
#                                  deployed stacks' steps
#   checks      docs/deploying.md  cfn-lint and checkov on the templates
#   fork        docs/template.md   the fork rehearsal's diff
#   mutants     docs/proof.md      make mutants' table
#
# Sources: make test's tier logs and status files (integration/scripts/
# tier.sh) in --test-logs DIR (default $TEST_LOGS, else .cache/test); a copy
# of make test's console output instead of DIR gives the tiers only. make
# mutants' output in --mutants-log FILE (default .cache/mutants.log); without
# that file the mutants block is left as it is (said, not failed), unless
# named.
#
# Options, for the headings (the logs cannot tell; without them a heading
# says nothing about the load):
#   --loaded            make test ran under integration/scripts/loaded.sh
#   --idle              nothing else ran beside make test
#   --note TEXT         more about make test's run, e.g. "fresh clone, bash .ci/run"
#   --mutants-note TEXT about make mutants' run, e.g. "beside a loaded make test"
#
# A block whose source lacks a line it needs is left as it is and the script
# exits 1 after writing the others: a test that stops printing a figure
# shows here, not as a stale page.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The blocks and the page of each (docs/tables_test.go reads this line).
blocks=(tiers:docs/testing.md suite:docs/proof.md localstack:docs/localstack.md checks:docs/deploying.md fork:docs/template.md mutants:docs/proof.md)

usage() {
	sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$root/integration/scripts/doc-tables.sh" >&2
	exit 2
}

logs="${TEST_LOGS:-$root/.cache/test}"
mutants_log="$root/.cache/mutants.log"
load=""
note=""
mutants_note=""
want=()
while (($#)); do
	case "$1" in
	--test-logs) logs="$(realpath -m -- "${2:?--test-logs DIR|FILE}")"; shift 2 ;;
	--mutants-log) mutants_log="$(realpath -m -- "${2:?--mutants-log FILE}")"; shift 2 ;;
	--loaded) load="under \`integration/scripts/loaded.sh\`, a busy loop per core"; shift ;;
	--idle) load="idle: nothing else running"; shift ;;
	--note) note="${2?--note TEXT}"; shift 2 ;;
	--mutants-note) mutants_note="${2?--mutants-note TEXT}"; shift 2 ;;
	-h | --help) usage ;;
	-*) echo "doc-tables: unknown option $1" >&2; usage ;;
	*) want+=("$1"); shift ;;
	esac
done
cd "$root" || exit 1
named=$((${#want[@]} > 0))
if ((!named)); then
	for b in "${blocks[@]}"; do want+=("${b%%:*}"); done
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
	echo "doc-tables: $*; the block is left as it is" >&2
	failed=1
}

# machine [NOTE]: how make test's run was made, for a heading; with NOTE,
# another run's.
machine() {
	local m
	m="$(nproc) cores"
	if (($#)); then
		[[ -n "$1" ]] && m+="; $1"
	else
		[[ -n "$load" ]] && m+=", $load"
		[[ -n "$note" ]] && m+="; $note"
	fi
	echo "$m"
}

# utc EPOCH [FORMAT]
utc() { date -u -d "@${1%.*}" "+${2:-%Y-%m-%d %H:%M UTC}"; }

# test_run: "make test of DATE, started HH:MM UTC (MACHINE)" from the
# earliest start in the status files, or for a console log its last write.
test_run() {
	local first
	if [[ -d "$logs" ]]; then
		first="$(sed -n 's/^start=//p' "$logs"/*.status 2>/dev/null | sort -n | head -1)"
		[[ -n "$first" ]] || return 1
		echo "\`make test\` of $(utc "$first" %Y-%m-%d), started $(utc "$first" '%H:%M UTC') ($(machine))"
	else
		echo "\`make test\` of $(utc "$(stat -c %Y "$logs")" %Y-%m-%d), its output last written $(utc "$(stat -c %Y "$logs")" '%H:%M UTC') ($(machine))"
	fi
}

# splice PAGE NAME FILE: replaces what lies between PAGE's markers of NAME
# with FILE.
splice() {
	local page=$1 name=$2 body=$3
	local begin="<!-- $name: begin -->" end="<!-- $name: end -->"
	local b e
	b="$(grep -cxF -- "$begin" "$page")"
	e="$(grep -cxF -- "$end" "$page")"
	if [[ "$b" != 1 || "$e" != 1 ]]; then
		fail "$name: $page holds $b line(s) \"$begin\" and $e \"$end\", want one of each"
		return
	fi
	awk -v begin="$begin" -v end="$end" -v body="$body" '
		$0 == begin { print; while ((getline l < body) > 0) print l; skip = 1; next }
		$0 == end { if (!skip) { bad = 1 } skip = 0 }
		!skip { print }
		END { exit bad }' "$page" >"$tmp/page" || {
		fail "$name: $page has \"$end\" before \"$begin\""
		return
	}
	cat "$tmp/page" >"$page"
	echo "doc-tables: $name -> $page"
}

# pick LOG REGEX: the lines of the tier log LOG matching REGEX (extended),
# trimmed; none fails the block.
pick() {
	local f="$logs/$1"
	if [[ ! -f "$f" ]]; then
		echo "no $f" >"$tmp/why"
		return 1
	fi
	if ! grep -E -- "$2" "$f" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' >>"$tmp/lines"; then
		echo "no line of $f matches /$2/" >"$tmp/why"
		return 1
	fi
}

# lines NAME INTRO PICKS...: a block of log lines (PICKS: LOG REGEX pairs).
lines() {
	local name=$1 intro=$2 page run
	shift 2
	page="$(page_of "$name")"
	if [[ ! -d "$logs" ]]; then
		fail "$name: needs make test's tier logs, a directory: $logs is not one"
		return
	fi
	run="$(test_run)" || { fail "$name: no status file in $logs"; return; }
	: >"$tmp/lines"
	while (($#)); do
		pick "$1" "$2" || { fail "$name: $(cat "$tmp/why")"; return; }
		shift 2
	done
	{
		echo "$intro, from the logs of $run; written by \`integration/scripts/doc-tables.sh $name\`:"
		echo
		echo '```text'
		cat "$tmp/lines"
		echo '```'
	} >"$tmp/body"
	splice "$page" "$name" "$tmp/body"
}

page_of() {
	local b
	for b in "${blocks[@]}"; do
		[[ "${b%%:*}" == "$1" ]] && { echo "${b#*:}"; return; }
	done
}

tiers() {
	local page run
	page="$(page_of tiers)"
	if [[ -d "$logs" ]]; then
		run="$(test_run)" || { fail "tiers: no status file in $logs"; return; }
		go run ./integration/internal/testsummary "$logs" >"$tmp/summary" || { fail "tiers: testsummary failed"; return; }
	elif [[ -f "$logs" ]]; then
		run="$(test_run)"
		cp "$logs" "$tmp/summary"
	else
		fail "tiers: no $logs"
		return
	fi
	# The last table in the output, and the verdict under it (not the
	# failures' details: their logs are gone by the time anyone reads this).
	awk '/^== make test: the time of each tier/ { n = 0; delete t; on = 1; next }
		on && /^== make test: / { v = $0; on = 0; next }
		on { t[++n] = $0 }
		END { if (!n || v == "") exit 1; for (i = 1; i <= n; i++) print t[i]; print v }' \
		"$tmp/summary" >"$tmp/table" || { fail "tiers: no tier table and verdict in $logs"; return; }
	{
		echo "The end of $run; written by \`integration/scripts/doc-tables.sh tiers\`:"
		echo
		echo '```text'
		cat "$tmp/table"
		echo '```'
	} >"$tmp/body"
	splice "$page" tiers "$tmp/body"
}

mutants() {
	local page when
	page="$(page_of mutants)"
	if [[ ! -f "$mutants_log" ]]; then
		if ((named)); then
			fail "mutants: no $mutants_log (make mutants | tee it, or --mutants-log FILE)"
		else
			echo "doc-tables: mutants: no $mutants_log (make mutants | tee it): left as it is"
		fi
		return
	fi
	# The table mutants prints, from its header to its last row.
	awk '/^\| bug \|/ { on = 1; n = 0 } on && /^\|/ { t[++n] = $0; next } on { on = 0 }
		END { if (n < 3) exit 1; for (i = 1; i <= n; i++) print t[i] }' \
		"$mutants_log" >"$tmp/table" || { fail "mutants: no table in $mutants_log"; return; }
	when="$(stat -c %Y "$mutants_log")"
	{
		echo "\`make mutants\`, its output last written $(utc "$when") ($(machine "$mutants_note")); written by \`integration/scripts/doc-tables.sh mutants\`:"
		echo
		cat "$tmp/table"
	} >"$tmp/body"
	splice "$page" mutants "$tmp/body"
}

for w in "${want[@]}"; do
	case "$w" in
	tiers) tiers ;;
	mutants) mutants ;;
	suite)
		lines suite "What the emulators tier and the simulator tier printed" \
			emulators.log 'faults_test\.go:[0-9]+: (lease|transactional) mode: ' \
			simulator.log 'sim_test\.go:[0-9]+: [0-9]+ schedules in ' \
			emulators.log 'models_(dynamo|redis)_test\.go:[0-9]+: .*schedules disagree' \
			emulators.log 'remote_test\.go:[0-9]+: retry: '
		;;
	localstack)
		lines localstack "LocalStack's install and start, and each step of the deployed stacks" \
			python-tools.log '^localstack: install: (done|up to date)' \
			localstack-phase.log '^localstack: (ready in|stopped)' \
			deployed-stack.log '^e2e-localstack: .* took ' \
			example.log '^(---- examples/|onlocalstack: .*: (ok|FAILED).* in [0-9]+ s$)'
		;;
	checks)
		lines checks "The template checks" \
			cfn-checks.log '^cfn-checks: (cfn-lint|checkov)[: ]|^checkov .*: [0-9]+ passed'
		;;
	fork)
		lines fork "The fork the rehearsal made" \
			fork-rehearsal.log '^fork-rehearsal: the fork: |^ *[^ ]+ +\| +[0-9]+ [-+]*$'
		;;
	*) echo "doc-tables: no block $w" >&2; usage ;;
	esac
done
exit "$failed"
