// A Lambda-like SQS consumer: batch processing + idempotency, built at import.
//
// Importing this module creates the DynamoDB client and persistence layer and
// wraps the record handler (the `cold` scenario measures exactly that);
// batch-new / batch-dup call handler(event, context) once per SQS event.
//
// The documented Powertools pattern for batch + idempotency:
//
//   const processor = new BatchProcessor(EventType.SQS);
//   const recordHandler = makeIdempotent(async (record) => ..., { persistenceStore, config });
//   export const handler = async (event, context) => {
//     config.registerLambdaContext(context);
//     return processPartialResponse(event, recordHandler, processor, { context });
//   };
//
// In Powertools for TypeScript, BatchProcessor runs the records of an event
// concurrently (Promise.all) by default; `processInParallel: false` makes it
// sequential. Both are measured (--processor concurrent | sequential).
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import * as common from './common.mjs';

export const persistenceStore = common.persistenceStore();

export const config = new IdempotencyConfig({
  // The key: the body's orderId, as sqsbatch.JSONField("orderId").
  eventKeyJmesPath: 'powertools_json(body).orderId',
  // The raw body, as sqsbatch fingerprints msg.Body.
  payloadValidationJmesPath: common.VALIDATION ? 'body' : undefined,
  useLocalCache: false,
  expiresAfterSeconds: common.EXPIRES_AFTER_SECONDS,
  throwOnNoIdempotencyKey: true,
});

const processor = new BatchProcessor(EventType.SQS);

export const recordHandler = makeIdempotent(
  async (record) => common.effect(JSON.parse(record.body)),
  { persistenceStore, config },
);

const makeHandler = (processInParallel) => async (event, context) => {
  config.registerLambdaContext(context); // the lease: time left in this invocation
  return processPartialResponse(event, recordHandler, processor, { context, processInParallel });
};

export const handler = makeHandler(true); // Powertools' default
export const sequentialHandler = makeHandler(false);
