#!/usr/bin/env bash
# cfn-checks.sh: check the synthesized CloudFormation templates with the
# tools a reviewer would run, and fail on anything not explained in infra/checks/.
#
#   cfn-lint  every template of every directory given; any error, warning or
#             informational finding fails, except those ignored (with their
#             reasons) in infra/checks/cfn-lint.yaml
#   checkov   cdk.hardened.out must pass every CloudFormation check except
#             those in infra/checks/checkov-exceptions.txt (each with its
#             reason; an exception that matches nothing fails too); the other
#             directories are scanned for the record: counts only, never fails
#
# Usage: cfn-checks.sh [DIR...]   default: cdk.out cdk.test.out cdk.hardened.out
#        cfn-checks.sh --install   only install the tools
#        (`make cfn-checks` synthesizes the three and runs this)
# Needs: python3 (3.9+; $PYTHON overrides). The tools, pinned in
# infra/checks/requirements.txt, go into a venv in .cache/cfn-venv, rebuilt
# only when the pins or the Python version change. Network: PyPI on the first
# run; checkov runs offline (--skip-download, no API key).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

say() { echo "cfn-checks: $*"; }
die() { echo "cfn-checks: ERROR: $*" >&2; exit 1; }

checks="infra/checks"
venv=".cache/cfn-venv"
python="${PYTHON:-python3}"

command -v "$python" >/dev/null 2>&1 || die "'$python' not found on PATH (set PYTHON to a Python 3.9+)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || die "$python is older than 3.9"

# --- tools --------------------------------------------------------------------
install_tools() {
	want="$(sha256sum "$checks/requirements.txt" | cut -d' ' -f1) python-$("$python" -c 'import platform; print(platform.python_version())')"
	stamp="$venv/.stamp"
	# A venv restored from a cache can point at a Python that is gone: it must
	# also still import both tools.
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$venv/bin/python" -c 'import cfnlint, checkov' 2>/dev/null; then
		say "tools up to date ($venv)"
	else
		say "installing $(grep -v '^#' "$checks/requirements.txt" | xargs) into $venv"
		rm -rf "$venv"
		"$python" -m venv "$venv"
		"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$checks/requirements.txt" ||
			die "pip install failed"
		echo "$want" >"$stamp"
	fi
}
if [[ "${1:-}" == "--install" ]]; then
	install_tools
	exit 0
fi

# The templates of the stacks a cloud assembly holds now: cdk synth leaves
# the templates of stacks it no longer synthesizes in the directory, so a
# glob would check stale ones.
assembly_templates() {
	"$python" - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
manifest = json.load(open(os.path.join(d, "manifest.json")))
for a in manifest.get("artifacts", {}).values():
    if a.get("type") == "aws:cloudformation:stack":
        print(os.path.join(d, a["properties"]["templateFile"]))
PY
}
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(cdk.out cdk.test.out cdk.hardened.out)
templates=()
for d in "${dirs[@]}"; do
	[[ -f "$d/manifest.json" ]] || die "no cloud assembly in $d/ (make synth, synth-test and synth-hardened; or make cfn-checks)"
	found="$(assembly_templates "$d")" || die "cannot read $d/manifest.json"
	[[ -n "$found" ]] || die "no stack template in $d/"
	mapfile -t -O "${#templates[@]}" templates <<<"$found"
done

install_tools

# --- cfn-lint -----------------------------------------------------------------
say "cfn-lint $("$venv/bin/cfn-lint" --version | awk '{print $2}') on ${templates[*]}"
"$venv/bin/cfn-lint" --config-file "$checks/cfn-lint.yaml" --non-zero-exit-code informational -- "${templates[@]}" ||
	die "cfn-lint findings above: fix them, or ignore one in $checks/cfn-lint.yaml with the reason"
say "cfn-lint: no findings"

# --- checkov ------------------------------------------------------------------
# verdict reads checkov's JSON report: strict mode applies the exceptions
# file and fails on any other failed check (or an unused exception).
verdict() {
	"$venv/bin/python" - "$@" <<'PY'
import json, sys

mode, exceptions_file, report_file, name = sys.argv[1:5]
raw = open(report_file).read()
try:
    report = json.loads(raw) if raw.strip() else {}
except json.JSONDecodeError:
    sys.exit(f"checkov {name}: unreadable report: {raw[:500]}")
if isinstance(report, list):  # one entry per framework
    report = next((r for r in report if r.get("check_type") == "cloudformation"), {})
results = report.get("results", {})
if "summary" not in report:
    sys.exit(f"checkov {name}: no CloudFormation results (did the template parse?)")
if report["summary"].get("parsing_errors"):
    sys.exit(f"checkov {name}: parsing errors: {results.get('parsing_errors')}")
passed = results.get("passed_checks", [])
failed = results.get("failed_checks", [])

exceptions = []  # (check id, logical id prefix, reason)
for line in open(exceptions_file):
    line = line.strip()
    if line and not line.startswith("#"):
        check, prefix, reason = line.split(None, 2)
        exceptions.append((check, prefix, reason))

def excepted(f):
    logical_id = f["resource"].split(".", 1)[-1]
    for e in exceptions:
        if e[0] == f["check_id"] and logical_id.startswith(e[1]):
            return e
    return None

if mode != "strict":
    ids = sorted({f["check_id"] for f in failed})
    print(f"checkov {name} (for the record): {len(passed)} passed, {len(failed)} failed: {' '.join(ids) or '-'}")
    sys.exit(0)

used, bad = set(), []
for f in failed:
    e = excepted(f)
    if e:
        used.add(e)
    else:
        bad.append(f)
print(f"checkov {name}: {len(passed)} passed, {len(failed)} failed, "
      f"{len(failed) - len(bad)} of them excepted, {len(bad)} not excepted")
for f in failed:
    e = excepted(f)
    if e:
        print(f"  excepted {f['check_id']} {f['resource']}: {e[2]}")
for f in bad:
    print(f"  FAILED   {f['check_id']} {f['resource']}: {f['check_name']}")
stale = [e for e in exceptions if e not in used]
for e in stale:
    print(f"  UNUSED exception {e[0]} {e[1]}: remove it from {exceptions_file}")
sys.exit(1 if bad or stale else 0)
PY
}

say "checkov $("$venv/bin/checkov" --version 2>/dev/null), offline"
report="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$report" "$log"' EXIT
status=0
for tpl in "${templates[@]}"; do
	mode=record
	[[ "$(basename "$(dirname "$tpl")")" == cdk.hardened.out ]] && mode=strict
	# --soft-fail: the verdict decides; checkov's own exit code would fail on
	# every excepted check. Its log (the vendor API it cannot reach) goes to
	# $log, shown when the report is unusable.
	"$venv/bin/checkov" --skip-download --framework cloudformation --soft-fail -o json -f "$tpl" >"$report" 2>"$log" || true
	if ! verdict "$mode" "$checks/checkov-exceptions.txt" "$report" "$tpl"; then
		[[ -s "$report" ]] || cat "$log" >&2
		status=1
	fi
done
[[ $status -eq 0 ]] || die "checkov: failed checks or unused exceptions above: fix them, or add an exception with its reason to $checks/checkov-exceptions.txt"
say "OK"
