"""Powertools for AWS Lambda (Python) side of `make bench`: one scenario per run.

    driver.py SCENARIO --endpoint URL --table NAME [options]

Prints ONE JSON object on stdout (the contract is in ../README.md); logs go
to stderr. Exit status: 0 ok; 1 the run finished but failed its correctness
check or had errors (the JSON is printed, with "ok": false and "failure");
2 bad usage or setup (no JSON).

Scenarios:
  lease-new   N new keys through @idempotent_function (W threads)
  lease-dup   the same, for N keys already completed (seeded first, unmeasured)
  batch-new   R SQS events of 10 new records through BatchProcessor
              (--processor sequential, Powertools' default) or
              AsyncBatchProcessor (--processor concurrent)
  batch-dup   the same, every record a duplicate (seeded first, unmeasured)
  cold        import the Lambda-like consumer module, print the JSON ("ready"), exit
"""

import time

_T0 = time.perf_counter()  # before anything else: `cold` reports the import time from here

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

SYSTEM = "powertools-python"
SCENARIOS = ("lease-new", "lease-dup", "batch-new", "batch-dup", "cold")
BATCH_SIZE = 10  # SQS's maximum batch size for standard queues without a window


def log(msg: str) -> None:
    print(f"powertools-driver: {msg}", file=sys.stderr, flush=True)


def proc_status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def process_age_seconds() -> float:
    """Seconds since this process started (exec), from /proc: 10 ms resolution."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="driver.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument("--endpoint", required=True, help="DynamoDB endpoint URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--table", required=True, help="table name (partition key 'id', S)")
    p.add_argument("--create-table", action="store_true", help="create the table first (PAY_PER_REQUEST)")
    p.add_argument("--messages", "-n", type=int, default=1000, help="lease-*: number of keys N (default 1000)")
    p.add_argument("--workers", "-w", type=int, default=None,
                   help="lease-*: threads W (default 1); batch-* --processor concurrent: records in flight (default 10)")
    p.add_argument("--events", "-r", type=int, default=50, help="batch-*: SQS events R of 10 records (default 50)")
    p.add_argument("--processor", choices=("sequential", "concurrent"), default="sequential",
                   help="batch-*: BatchProcessor (Powertools' default, one record at a time) or "
                        "AsyncBatchProcessor with the idempotent handler in a pool of --workers threads")
    p.add_argument("--validation", choices=("on", "off"), default="on", help="payload validation (default on)")
    p.add_argument("--key-prefix", default=None, help="prefix of the orderIds (default: unique per run)")
    a = p.parse_args(argv)
    if a.workers is None:
        a.workers = 10 if (a.scenario.startswith("batch") and a.processor == "concurrent") else 1
    if a.scenario.startswith("batch") and a.processor == "sequential" and a.workers != 1:
        p.error("--processor sequential runs one record at a time: --workers must be 1")
    if a.messages < 1 or a.workers < 1 or a.events < 1:
        p.error("--messages, --workers and --events must be positive")
    if a.key_prefix is None:
        a.key_prefix = f"pt-{os.getpid()}-{os.urandom(4).hex()}"
    return a


def configure_env(a) -> None:
    """What a Lambda has in its environment; read by common.py at import."""
    os.environ["BENCH_TABLE"] = a.table
    os.environ["BENCH_ENDPOINT"] = a.endpoint
    os.environ["BENCH_MAX_POOL"] = str(a.workers)
    os.environ["BENCH_VALIDATION"] = a.validation
    # Dummy credentials and a fixed region whatever the caller's environment
    # holds (a profile, a session token, real keys): DynamoDB Local only.
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        os.environ.pop(var, None)
    os.environ.update({
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/dev/null",  # no shared config files
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",  # no IMDS probing
    })
    # As in Lambda: AsyncBatchProcessor then reuses one event loop across
    # invocations instead of asyncio.run() per event (see its async_process).
    os.environ.setdefault("LAMBDA_TASK_ROOT", os.path.dirname(os.path.abspath(__file__)))


def versions() -> dict:
    import boto3
    import botocore
    from aws_lambda_powertools.shared.version import VERSION

    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "aws-lambda-powertools": VERSION,
        "boto3": boto3.__version__,
        "botocore": botocore.__version__,
    }


class RequestCounter:
    """Counts the HTTP requests botocore sends, per operation (retries included)."""

    def __init__(self, client):
        import threading

        self._lock = threading.Lock()
        self.by_op: dict[str, int] = {}
        client.meta.events.register("before-send.dynamodb", self._count)

    def _count(self, event_name, **kwargs):
        op = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.by_op[op] = self.by_op.get(op, 0) + 1
        return None  # None: send the request for real

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.by_op)


def delta(after: dict, before: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v - before.get(k, 0)}


def cpu_seconds() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)  # all threads of the process
    return r.ru_utime + r.ru_stime


def create_table(client, table: str) -> None:
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.2, "MaxAttempts": 150})


def order(key: str) -> dict:
    return {"orderId": key, "customer": "c-1", "amountCents": 1234}


def expected_result(key: str) -> dict:
    return {"giftCard": "gc-" + key, "amountCents": 1234}


# --- lease-* ------------------------------------------------------------------


def run_threads(workers: int, keys: list, call) -> tuple:
    """Calls call(key) for every key from `workers` threads pulling from one list.

    Returns (errors, first_error_text)."""
    import threading

    lock = threading.Lock()
    state = {"next": 0, "errors": 0, "first": None}

    def worker():
        while True:
            with lock:
                i = state["next"]
                if i >= len(keys):
                    return
                state["next"] = i + 1
            try:
                call(keys[i])
            except Exception as exc:  # counted; the first one is reported
                with lock:
                    state["errors"] += 1
                    if state["first"] is None:
                        state["first"] = f"{keys[i]}: {type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=worker, name=f"w{i}") for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return state["errors"], state["first"]


def scenario_lease(a, out: dict) -> str | None:
    import common
    import lease

    counter = RequestCounter(lease.persistence.client)
    if a.create_table:
        create_table(lease.persistence.client, a.table)

    def call_new(key):
        got = lease.process_order(order=order(key))
        if got != expected_result(key):
            raise AssertionError(f"result {got!r}")

    wrong_replays = []

    def call_dup(key):
        got = lease.process_order(order=order(key))
        if got != expected_result(key):  # the stored result, replayed
            wrong_replays.append(key)
            raise AssertionError(f"replayed result {got!r}")

    # Warm-up, not measured: client and connection pool (one new key per
    # worker, so all W connections get opened), Powertools' lazy configure(),
    # JMESPath compilation, and the duplicate path (the same keys again).
    warm = [f"{a.key_prefix}-warm-{i}" for i in range(a.workers)]
    errs, first = run_threads(a.workers, warm, call_new)
    errs2, first2 = run_threads(a.workers, warm, call_dup)
    if errs or errs2:
        raise SystemExit(f"warm-up failed: {first or first2}")

    keys = [f"{a.key_prefix}-{i:07d}" for i in range(a.messages)]
    if a.scenario == "lease-dup":
        log(f"seeding {len(keys)} keys (not measured)")
        errs, first = run_threads(a.workers, keys, call_new)
        if errs:
            raise SystemExit(f"seeding failed: {errs} errors, first: {first}")
    common.effects.reset()

    call = call_new if a.scenario == "lease-new" else call_dup
    req0, cpu0, t0 = counter.snapshot(), cpu_seconds(), time.perf_counter()
    errors, first = run_threads(a.workers, keys, call)  # the measured loop
    t1, cpu1, req1 = time.perf_counter(), cpu_seconds(), counter.snapshot()

    out.update(seconds=t1 - t0, cpu_seconds=cpu1 - cpu0, errors=errors)
    out["requests"] = delta(req1, req0)
    out["requests_total"] = counter.snapshot()  # the whole run: table, warm-up, seeding, loop
    return check_effects(a.scenario.endswith("-new"), keys, common.effects.reset(), errors, first)


def check_effects(new: bool, keys: list, calls: dict, errors: int, first_error) -> str | None:
    """None if every key ran its effect exactly once (new) or never (dup)."""
    if errors:
        return f"{errors} calls failed, first: {first_error}"
    if new:
        bad = [k for k in keys if calls.get(k) != 1]
        if bad or len(calls) != len(keys):
            return f"{len(bad)} of {len(keys)} keys did not run their effect exactly once (e.g. {bad[:3]}), {len(calls)} keys ran"
    elif calls:
        return f"{sum(calls.values())} effect calls on duplicates (e.g. {list(calls)[:3]})"
    return None


# --- batch-* --------------------------------------------------------------------


def sqs_event(keys: list, salt: str) -> dict:
    """An SQS event as Lambda delivers it (messageId distinct per record)."""
    now_ms = str(int(time.time() * 1000))
    records = []
    for i, key in enumerate(keys):
        body = json.dumps(order(key), separators=(",", ":"))
        records.append({
            "messageId": f"{salt}-{i:02d}-{os.urandom(8).hex()}",
            "receiptHandle": "AQEB" + os.urandom(48).hex(),
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": now_ms,
                "SenderId": "AIDAIENQZJOLO23YVJ4VO",
                "ApproximateFirstReceiveTimestamp": now_ms,
            },
            "messageAttributes": {},
            "md5OfBody": __import__("hashlib").md5(body.encode()).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:orders",
            "awsRegion": "us-east-1",
        })
    return {"Records": records}


def scenario_batch(a, out: dict) -> str | None:
    import common
    import consumer

    counter = RequestCounter(consumer.persistence.client)
    if a.create_table:
        create_table(consumer.persistence.client, a.table)
    handler = consumer.async_lambda_handler if a.processor == "concurrent" else consumer.lambda_handler

    def run_events(events) -> tuple:
        failed, first = 0, None
        for ev in events:
            resp = handler(ev, common.FakeLambdaContext())  # a fresh invocation per event
            items = resp.get("batchItemFailures", [])
            failed += len(items)
            if items and first is None:
                first = f"batchItemFailures: {items[:3]}"
        return failed, first

    def events_for(keys, salt):
        return [sqs_event(keys[i:i + BATCH_SIZE], f"{salt}{i // BATCH_SIZE}") for i in range(0, len(keys), BATCH_SIZE)]

    # Warm-up, not measured: one new event (all 10 records, so the async
    # variant opens its connections and threads) and the same again (dup path).
    warm = [f"{a.key_prefix}-warm-{i}" for i in range(BATCH_SIZE)]
    for salt in ("warm-new", "warm-dup"):
        errs, first = run_events(events_for(warm, salt))
        if errs:
            raise SystemExit(f"warm-up failed: {first}")

    keys = [f"{a.key_prefix}-{i:07d}" for i in range(a.events * BATCH_SIZE)]
    if a.scenario == "batch-dup":
        log(f"seeding {len(keys)} keys in {a.events} events (not measured)")
        errs, first = run_events(events_for(keys, "seed"))
        if errs:
            raise SystemExit(f"seeding failed: {errs} record failures, first: {first}")
    events = events_for(keys, "run")  # built before the clock starts
    common.effects.reset()

    req0, cpu0, t0 = counter.snapshot(), cpu_seconds(), time.perf_counter()
    errors, first = run_events(events)  # the measured loop
    t1, cpu1, req1 = time.perf_counter(), cpu_seconds(), counter.snapshot()

    out.update(seconds=t1 - t0, cpu_seconds=cpu1 - cpu0, errors=errors)
    out["per_event_seconds"] = (t1 - t0) / a.events
    out["events"] = a.events
    out["batch_size"] = BATCH_SIZE
    out["requests"] = delta(req1, req0)
    out["requests_total"] = counter.snapshot()  # the whole run: table, warm-up, seeding, loop
    return check_effects(a.scenario.endswith("-new"), keys, common.effects.reset(), errors, first)


def main(argv) -> int:
    a = parse_args(argv)
    configure_env(a)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    if a.scenario == "cold":
        import consumer  # noqa: F401  (builds the client + persistence layer, decorates: as a Lambda init)

        ready = time.perf_counter()
        out = {
            "system": SYSTEM, "scenario": "cold", "workers": a.workers, "messages": 0,
            "seconds": ready - _T0,  # in-process: driver start -> ready (excludes interpreter start-up)
            "process_seconds": process_age_seconds(),  # exec -> ready, 10 ms resolution
            "cpu_seconds": cpu_seconds(),  # everything the process used so far
            "rss_kb": proc_status_kb("VmRSS"), "rss_peak_kb": proc_status_kb("VmHWM"),
            "errors": 0, "ok": True, "versions": versions(),
        }
        print(json.dumps(out), flush=True)
        return 0

    out = {
        "system": SYSTEM, "scenario": a.scenario, "workers": a.workers,
        "messages": a.messages if a.scenario.startswith("lease") else a.events * BATCH_SIZE,
        "validation": a.validation,
    }
    if a.scenario.startswith("batch"):
        out["processor"] = a.processor
        out["processor_impl"] = (
            f"AsyncBatchProcessor+ThreadPoolExecutor({a.workers})" if a.processor == "concurrent" else "BatchProcessor"
        )
    try:
        run = scenario_lease if a.scenario.startswith("lease") else scenario_batch
        failure = run(a, out)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            log(exc.code)
            return 2
        raise
    except Exception:  # setup or infrastructure trouble, not a measurement: no JSON
        import traceback

        traceback.print_exc()
        return 2
    out["rss_kb"] = proc_status_kb("VmRSS")
    out["rss_peak_kb"] = proc_status_kb("VmHWM")
    out["msgs_per_second"] = out["messages"] / out["seconds"] if out["seconds"] > 0 else None
    out["cpu_seconds_per_message"] = out["cpu_seconds"] / out["messages"]
    out["requests_per_message"] = sum(out["requests"].values()) / out["messages"]
    out["ok"] = failure is None
    if failure:
        out["failure"] = failure
        log("FAILED: " + failure)
    out["versions"] = versions()
    print(json.dumps(out), flush=True)
    return 0 if failure is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
