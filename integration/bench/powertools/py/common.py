"""Shared by lease.py and consumer.py: settings that must match the Go side.

Everything here is read from the environment at import time, as a Lambda
reads its configuration; driver.py sets these variables from its flags
before importing a handler module:

    BENCH_TABLE       DynamoDB table (partition key "id", S)             required
    BENCH_ENDPOINT    DynamoDB endpoint URL (the orchestrator's proxy)   required
    BENCH_MAX_POOL    botocore max_pool_connections (= workers)          default 10
    BENCH_VALIDATION  "on" | "off": payload validation                   default on
"""

import os
import threading
import time

import boto3
from botocore.config import Config

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

# Receipts live 7 days, as pkg/idem's default retention (WithRetention).
EXPIRES_AFTER_SECONDS = 7 * 24 * 3600
# The stack's FunctionTimeout (infra/config.go): a fake invocation has this
# much time left when it starts, which Powertools turns into the record's
# in_progress_expiration (the lease), as pkg/idem does with the deadline.
FUNCTION_TIMEOUT_MS = 30_000

TABLE = os.environ["BENCH_TABLE"]
ENDPOINT = os.environ["BENCH_ENDPOINT"]
MAX_POOL = int(os.environ.get("BENCH_MAX_POOL", "10"))
VALIDATION = os.environ.get("BENCH_VALIDATION", "on") == "on"


def persistence_layer() -> DynamoDBPersistenceLayer:
    """The documented construction, plus an explicit endpoint and pool size.

    Region and dummy credentials come from the environment (AWS_REGION,
    AWS_ACCESS_KEY_ID=test, ...), as in Lambda.
    """
    cfg = Config(max_pool_connections=MAX_POOL)
    client = boto3.session.Session().client("dynamodb", endpoint_url=ENDPOINT, config=cfg)
    return DynamoDBPersistenceLayer(table_name=TABLE, boto3_client=client)


class FakeLambdaContext:
    """The part of LambdaContext Powertools reads: time left before the deadline."""

    function_name = "powertools-bench"
    memory_limit_in_mb = 1024
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def __init__(self, timeout_ms: int = FUNCTION_TIMEOUT_MS):
        self._deadline = time.monotonic() + timeout_ms / 1000.0

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class FreshInvocationContext(FakeLambdaContext):
    """Every call looks like the start of an invocation: FUNCTION_TIMEOUT_MS left.

    For lease-*, where there is no invocation around a call."""

    def get_remaining_time_in_millis(self) -> int:
        return FUNCTION_TIMEOUT_MS


class EffectCounter:
    """Counts effect runs per key, in-process (the correctness check)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def hit(self, key: str) -> None:
        with self._lock:
            self.calls[key] = self.calls.get(key, 0) + 1

    def reset(self) -> dict[str, int]:
        with self._lock:
            old, self.calls = self.calls, {}
        return old


effects = EffectCounter()


def effect(order: dict) -> dict:
    """The trivial business effect: count it, return a small dict."""
    effects.hit(order["orderId"])
    return {"giftCard": "gc-" + order["orderId"], "amountCents": order["amountCents"]}
