"""Smoke test of the stack deployed into LocalStack (make deploy-local): by hand, not in `make test`.

    eval "$(bash integration/kit/localstack/localstack.sh env)"
    .cache/localstack/venv/bin/python integration/kit/localstack/smoke.py [--assembly build/local/cdk.out] [--fields '{...}'] [--describe]

The stack, its outputs and the consumer's key come from the deployed
assembly (manifest.json) and the stack's outputs; nothing is typed here.

1. invokes the producer with one message (its key field, plus --fields,
   which default to the template's gift-card order) and waits until
   LocalStack's own SQS event source mapping has run the consumer and its
   receipt is COMPLETED;
2. sends one batch with two good messages and a malformed body (no key
   attribute, not JSON): the good ones must be done and deleted, the
   malformed one must reach the DLQ after maxReceiveCount receives
   (partial batch response honoured);
3. finds the consumer's log lines about the malformed message (its
   message id) in CloudWatch Logs (/aws/lambda/<consumer>).
--describe prints how the deployed resources look (PITR, TTL, log
retention, ESM, queue attributes, function configuration).
Uses AWS_ENDPOINT_URL and the test credentials from the environment.
"""

import argparse
import hashlib
import json
import os
import sys
import time
import uuid

import boto3


def client(name):
    return boto3.client(name, endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ.get("AWS_REGION", "us-east-1"))


def stack_name(assembly: str) -> str:
    with open(os.path.join(assembly, "manifest.json")) as f:
        artifacts = json.load(f)["artifacts"]
    stacks = [a.get("properties", {}).get("stackName", k) for k, a in artifacts.items() if a["type"] == "aws:cloudformation:stack"]
    if len(stacks) != 1:
        sys.exit(f"FAIL: want one stack in {assembly}, found {stacks}")
    return stacks[0]


def outputs(stack: str) -> dict:
    s = client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in s.get("Outputs", [])}


def wait(what: str, fn, timeout: float, every: float = 0.5):
    t0 = time.monotonic()
    while True:
        v = fn()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            sys.exit(f"FAIL: {what}: not after {timeout:.0f} s")
        time.sleep(every)


def receipt_status(out: dict, key: str):
    """The consumer's receipt for key: namespace#sha256(key), as pkg/idem stores it."""
    pk = out["Namespace"] + "#" + hashlib.sha256(key.encode()).hexdigest()
    item = client("dynamodb").get_item(TableName=out["ReceiptTableName"], Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
    return item["status"]["S"] if item else None


def describe(out: dict) -> None:
    ddb, lam, logs, sqs = client("dynamodb"), client("lambda"), client("logs"), client("sqs")
    for key in [k for k in out if k.endswith("TableName")]:
        t = out[key]
        pitr = ddb.describe_continuous_backups(TableName=t)["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
        ttl = ddb.describe_time_to_live(TableName=t)["TimeToLiveDescription"]
        desc = ddb.describe_table(TableName=t)["Table"]
        print(f"table {key}: PITR={pitr.get('PointInTimeRecoveryStatus')} TTL={ttl} SSE={desc.get('SSEDescription')} billing={desc.get('BillingModeSummary', {}).get('BillingMode')}")
    for key in ("ConsumerFunctionName", "ProducerFunctionName"):
        c = lam.get_function_configuration(FunctionName=out[key])
        keep = {k: c.get(k) for k in ("Runtime", "Architectures", "Timeout", "MemorySize", "TracingConfig", "LoggingConfig", "DeadLetterConfig", "State")}
        conc = lam.get_function_concurrency(FunctionName=out[key]).get("ReservedConcurrentExecutions")
        print(f"function {key}: {json.dumps(keep)} reserved={conc} env={sorted(c.get('Environment', {}).get('Variables', {}))}")
    for m in lam.list_event_source_mappings(FunctionName=out["ConsumerFunctionName"])["EventSourceMappings"]:
        keep = {k: m.get(k) for k in ("State", "BatchSize", "MaximumBatchingWindowInSeconds", "FunctionResponseTypes", "ScalingConfig")}
        print(f"event source mapping: {json.dumps(keep)}")
    for key in ("QueueUrl", "DeadLetterQueueUrl"):
        a = sqs.get_queue_attributes(QueueUrl=out[key], AttributeNames=["All"])["Attributes"]
        keep = {k: a.get(k) for k in ("VisibilityTimeout", "MessageRetentionPeriod", "RedrivePolicy", "SqsManagedSseEnabled", "KmsMasterKeyId")}
        print(f"queue {key}: {json.dumps(keep)}")
    for g in logs.describe_log_groups()["logGroups"]:
        print(f"log group {g['logGroupName']}: retentionInDays={g.get('retentionInDays')}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--assembly", default="build/local/cdk.out", help="the assembly cdklocal deployed (make deploy-local writes build/local/cdk.out)")
    ap.add_argument("--fields", default='{"customer": "c", "amountCents": 100}', help="JSON fields of a message besides its key")
    ap.add_argument("--describe", action="store_true")
    args = ap.parse_args()
    out = outputs(stack_name(args.assembly))
    if args.describe:
        describe(out)
    key_field, fields = out["Key"], json.loads(args.fields)
    lam, sqs, logs = client("lambda"), client("sqs"), client("logs")
    run = uuid.uuid4().hex[:6]

    def body(key: str) -> str:
        return json.dumps({key_field: key, **fields})

    # 1. producer -> queue -> LocalStack's ESM -> consumer -> receipt
    key = f"k-{run}"
    t0 = time.monotonic()
    r = lam.invoke(FunctionName=out["ProducerFunctionName"], Payload=json.dumps({"messages": [json.loads(body(key))]}))
    answer = json.loads(r["Payload"].read())
    print(f"producer: {time.monotonic() - t0:.2f} s, FunctionError={r.get('FunctionError')}, answer={answer}")
    if r.get("FunctionError"):
        sys.exit("FAIL: the producer failed")
    status, took = wait(f"receipt of {key}", lambda: receipt_status(out, key) == "COMPLETED" and "COMPLETED", 120)
    print(f"receipt of {key}: {status}, {time.monotonic() - t0:.2f} s after the invoke (ESM + consumer {took:.2f} s)")

    # 2. a batch with a malformed message: partial batch failure -> DLQ
    good = [f"g1-{run}", f"g2-{run}"]
    entries = [{"Id": "bad", "MessageBody": '{"not": "json'}]
    entries += [
        {"Id": f"g{i}", "MessageBody": body(g), "MessageAttributes": {key_field: {"DataType": "String", "StringValue": g}}}
        for i, g in enumerate(good)
    ]
    t1 = time.monotonic()
    res = sqs.send_message_batch(QueueUrl=out["QueueUrl"], Entries=entries)
    if res.get("Failed"):
        sys.exit(f"FAIL: send_message_batch: {res['Failed']}")
    bad_id = next(e["MessageId"] for e in res["Successful"] if e["Id"] == "bad")
    for g in good:
        wait(f"receipt of {g}", lambda g=g: receipt_status(out, g) == "COMPLETED", 120)
    print(f"good messages of the batch done, {time.monotonic() - t1:.2f} s")

    def dlq_message():
        msgs = sqs.receive_message(
            QueueUrl=out["DeadLetterQueueUrl"], MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=0,
            MessageAttributeNames=["All"], AttributeNames=["All"],
        ).get("Messages", [])
        return next((m for m in msgs if m["MessageId"] == bad_id), None)

    m, _ = wait(f"message {bad_id} in the DLQ", dlq_message, 300, every=1)
    print(f"{bad_id} in the DLQ after {time.monotonic() - t1:.1f} s, ApproximateReceiveCount={m['Attributes'].get('ApproximateReceiveCount')}")
    main_q = sqs.get_queue_attributes(QueueUrl=out["QueueUrl"], AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    print(f"queue now: {main_q} (good messages deleted)")

    # 3. why it went there, from CloudWatch Logs (the consumer logs the
    # message id of a record whose key it could not read)
    group = f"/aws/lambda/{out['ConsumerFunctionName']}"

    def log_lines():
        found = []
        for s in logs.describe_log_streams(logGroupName=group)["logStreams"]:
            for e in logs.get_log_events(logGroupName=group, logStreamName=s["logStreamName"], startFromHead=True)["events"]:
                if bad_id in e["message"]:
                    found.append((s["logStreamName"], e["message"].rstrip()))
        return found

    found, _ = wait(f"log lines about message {bad_id} in {group}", log_lines, 30)
    print(f"{len(found)} log lines about message {bad_id} in {group}, e.g. stream {found[0][0]}:\n  {found[0][1]}")
    print("OK")


if __name__ == "__main__":
    main()
