#!/usr/bin/env bash
# install.sh: install the Powertools for AWS Lambda side of `make bench`.
#
#   python: aws-lambda-powertools 3.37.0 + boto3 (requirements.txt, hash-pinned)
#           -> $REPO/.cache/bench/powertools-venv
#   ts:     @aws-lambda-powertools/{idempotency,batch} + @aws-sdk/{client,lib}-dynamodb
#           (ts/package.json + ts/package-lock.json) -> ts/node_modules (npm ci)
#
# Usage: install.sh [all|python|ts]      (default: all)
# Env:   PYTHON  interpreter for the venv (default: python3; needs >= 3.10)
#
# Idempotent: each part keeps a stamp with the hash of its inputs and is
# skipped when they have not changed (a warm run takes well under a second).
# Network: PyPI (pip) and the npm registry only. Writes nothing outside
# $REPO/.cache/bench/ and this directory's ts/node_modules/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="$root/.cache/bench/powertools-venv"
what="${1:-all}"

say() { echo "powertools-install: $*" >&2; }
die() { echo "powertools-install: ERROR: $*" >&2; exit 1; }
hash_of() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

case "$what" in all | python | ts) ;; *) die "usage: install.sh [all|python|ts]" ;; esac

install_python() {
	local py="${PYTHON:-python3}"
	command -v "$py" >/dev/null 2>&1 || die "'$py' not found on PATH (set PYTHON=/path/to/python3.10+)"
	# The real interpreter behind a shim (pyenv) and its version are inputs
	# too: a venv is tied to the interpreter that made it.
	local info
	info="$("$py" -c 'import sys; print(sys.executable, "%d.%d.%d" % sys.version_info[:3], sys.version_info >= (3, 10))')" ||
		die "'$py' does not run"
	[[ "${info##* }" == True ]] || die "Python >= 3.10 needed by aws-lambda-powertools 3.37.0 and boto3 1.44 (have: $info)"
	local stamp="$venv/.sqsidem-install.stamp"
	local want
	want="$( { hash_of "$here/requirements.txt" "$here/install.sh"; echo "$info"; } | sha256sum | cut -d' ' -f1)"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/python" ]]; then
		say "python venv up to date ($venv)"
		return
	fi
	say "creating $venv with ${info% *}"
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	"$py" -m venv "$venv"
	# --no-deps + --require-hashes: exactly the wheels of requirements.txt.
	# pip compiles the .pyc files at install time (as a Lambda layer build
	# would), so `cold` does not pay for bytecode compilation.
	PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
		"$venv/bin/python" -m pip install --quiet --no-deps --require-hashes -r "$here/requirements.txt" ||
		die "pip install failed"
	"$venv/bin/python" -c 'import aws_lambda_powertools.utilities.idempotency, aws_lambda_powertools.utilities.batch, boto3' ||
		die "the venv does not import Powertools"
	echo "$want" >"$stamp"
	say "python: $("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(aws.lambda.powertools|boto3|botocore)=' | tr '\n' ' ')"
}

install_ts() {
	command -v node >/dev/null 2>&1 || die "'node' not found on PATH (need Node.js 20+)"
	command -v npm >/dev/null 2>&1 || die "'npm' not found on PATH"
	local major
	major="$(node -p 'process.versions.node.split(".")[0]')"
	[[ "$major" -ge 20 ]] || die "Node.js 20+ needed by @aws-sdk/client-dynamodb 3.1162 (have $(node --version))"
	local dir="$here/ts"
	local stamp="$dir/node_modules/.sqsidem-install.stamp"
	local want
	want="$( { hash_of "$dir/package.json" "$dir/package-lock.json" "$here/install.sh"; echo "node$major"; } | sha256sum | cut -d' ' -f1)"
	if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		say "ts node_modules up to date ($dir/node_modules)"
		return
	fi
	say "npm ci in $dir"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $dir"
	echo "$want" >"$stamp"
}

case "$what" in
all) install_python; install_ts ;;
python) install_python ;;
ts) install_ts ;;
esac
