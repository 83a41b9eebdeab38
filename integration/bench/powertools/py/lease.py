"""lease-new / lease-dup: one idempotent function, the payload is the order dict.

    @idempotent_function(data_keyword_argument="order", ...)
    def process_order(order): ...            # order = {"orderId", "customer", "amountCents"}

The equivalent of guard.Do(ctx, key, payload, effect) in pkg/idem.
"""

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

import common

persistence = common.persistence_layer()

config = IdempotencyConfig(
    event_key_jmespath="orderId",  # the key: the same field as sqsbatch.JSONField("orderId")
    # "@" = the whole payload: the same key with any other payload raises
    # IdempotencyValidationError, as pkg/idem's fingerprint gives ErrPayloadMismatch.
    payload_validation_jmespath="@" if common.VALIDATION else "",
    use_local_cache=False,  # pkg/idem without WithCache: every duplicate asks DynamoDB
    expires_after_seconds=common.EXPIRES_AFTER_SECONDS,
    raise_on_no_idempotency_key=True,  # no key is an error, never "run without protection"
)
# Outside a Lambda handler nobody registers the context; without one Powertools
# writes no in_progress_expiration (no lease) and warns on every call.
config.register_lambda_context(common.FreshInvocationContext())


@idempotent_function(data_keyword_argument="order", config=config, persistence_store=persistence)
def process_order(order: dict) -> dict:
    return common.effect(order)
