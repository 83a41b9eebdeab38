"""A Lambda-like SQS consumer: batch processing + idempotency, built at import.

This module is what a Lambda would load: importing it creates the DynamoDB
client and persistence layer and decorates the record handler (the `cold`
scenario measures exactly that). batch-new / batch-dup call
lambda_handler(event, context) once per SQS event.

The documented Powertools pattern for batch + idempotency:

    processor = BatchProcessor(event_type=EventType.SQS)

    @idempotent_function(data_keyword_argument="record", config=config, persistence_store=persistence)
    def record_handler(record: SQSRecord): ...

    def lambda_handler(event, context):
        config.register_lambda_context(context)
        return process_partial_response(event=event, record_handler=record_handler,
                                        processor=processor, context=context)

Powertools runs the records one after the other. The concurrent variant uses
Powertools' AsyncBatchProcessor (asyncio.gather over the records); as
Powertools' idempotency is synchronous only (no async support in 3.37), its
async record handler runs the same idempotent record_handler in a thread pool
of BENCH_MAX_POOL threads (10 = pkg/idem sqsbatch.DefaultConcurrency). That
wiring is ours, not a documented Powertools recipe.
"""

import asyncio
import functools
import json
from concurrent.futures import ThreadPoolExecutor

from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    BatchProcessor,
    EventType,
    async_process_partial_response,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

import common

persistence = common.persistence_layer()

config = IdempotencyConfig(
    # The key: the body's orderId, as sqsbatch.JSONField("orderId").
    event_key_jmespath="powertools_json(body).orderId",
    # The raw body, as sqsbatch fingerprints msg.Body: the same key with
    # another body raises IdempotencyValidationError (the record fails).
    payload_validation_jmespath="body" if common.VALIDATION else "",
    use_local_cache=False,
    expires_after_seconds=common.EXPIRES_AFTER_SECONDS,
    raise_on_no_idempotency_key=True,
)

processor = BatchProcessor(event_type=EventType.SQS)


@idempotent_function(data_keyword_argument="record", config=config, persistence_store=persistence)
def record_handler(record: SQSRecord) -> dict:
    return common.effect(json.loads(record.body))


def lambda_handler(event: dict, context) -> dict:
    config.register_lambda_context(context)  # the lease: time left in this invocation
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)


# --- concurrent variant -------------------------------------------------------
async_processor = AsyncBatchProcessor(event_type=EventType.SQS)
_pool = ThreadPoolExecutor(max_workers=common.MAX_POOL, thread_name_prefix="record")


async def async_record_handler(record: SQSRecord) -> dict:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool, functools.partial(record_handler, record=record))


def async_lambda_handler(event: dict, context) -> dict:
    config.register_lambda_context(context)
    return async_process_partial_response(
        event=event, record_handler=async_record_handler, processor=async_processor, context=context
    )
