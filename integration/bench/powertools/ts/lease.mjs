// lease-new / lease-dup: one idempotent function, the payload is the order.
//
//   const processOrder = makeIdempotent(async (order) => ..., { persistenceStore, config });
//
// The equivalent of guard.Do(ctx, key, payload, effect) in pkg/idem.
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import * as common from './common.mjs';

export const persistenceStore = common.persistenceStore();

export const config = new IdempotencyConfig({
  eventKeyJmesPath: 'orderId', // the same field as sqsbatch.JSONField("orderId")
  // '@' = the whole payload: the same key with another payload throws
  // IdempotencyValidationError, as pkg/idem's fingerprint gives ErrPayloadMismatch.
  payloadValidationJmesPath: common.VALIDATION ? '@' : undefined,
  useLocalCache: false, // every duplicate asks DynamoDB
  expiresAfterSeconds: common.EXPIRES_AFTER_SECONDS,
  throwOnNoIdempotencyKey: true,
});
// Outside a handler nobody registers the context; without one Powertools
// writes no in_progress_expiration (no lease) and warns on every call.
config.registerLambdaContext(new common.FreshInvocationContext());

export const processOrder = makeIdempotent(common.effect, { persistenceStore, config });
