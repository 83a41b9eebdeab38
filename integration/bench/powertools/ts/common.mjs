// Shared by lease.mjs and consumer.mjs: settings that must match the Go side.
// Read from the environment at import, as a Lambda reads its configuration;
// driver.mjs sets these from its flags before importing a handler module:
//
//   BENCH_TABLE       DynamoDB table (partition key "id", S)             required
//   BENCH_ENDPOINT    DynamoDB endpoint URL (the orchestrator's proxy)   required
//   BENCH_MAX_POOL    max sockets of the SDK's HTTP agent (= workers)    default 10
//   BENCH_VALIDATION  "on" | "off": payload validation                   default on
import http from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

// Receipts live 7 days, as pkg/idem's default retention.
export const EXPIRES_AFTER_SECONDS = 7 * 24 * 3600;
// The stack's FunctionTimeout (infra/config.go); see FakeLambdaContext.
export const FUNCTION_TIMEOUT_MS = 30_000;

export const TABLE = process.env.BENCH_TABLE;
export const ENDPOINT = process.env.BENCH_ENDPOINT;
export const MAX_POOL = Number(process.env.BENCH_MAX_POOL ?? '10');
export const VALIDATION = (process.env.BENCH_VALIDATION ?? 'on') === 'on';
if (!TABLE || !ENDPOINT) throw new Error('BENCH_TABLE and BENCH_ENDPOINT must be set');

// The DynamoDB client: explicit endpoint, region and pool size (keep-alive
// agent with MAX_POOL sockets, the counterpart of botocore's
// max_pool_connections); credentials come from the environment (test/test).
export const client = new DynamoDBClient({
  endpoint: ENDPOINT,
  region: process.env.AWS_REGION ?? 'us-east-1',
  requestHandler: { httpAgent: new http.Agent({ keepAlive: true, maxSockets: MAX_POOL }) },
});

export const persistenceStore = () =>
  new DynamoDBPersistenceLayer({ tableName: TABLE, awsSdkV3Client: client });

// The part of the Lambda context Powertools reads: time left before the
// deadline, which becomes the record's in_progress_expiration (the lease).
export class FakeLambdaContext {
  constructor(timeoutMs = FUNCTION_TIMEOUT_MS) {
    this.deadline = Date.now() + timeoutMs;
    this.functionName = 'powertools-bench';
    this.functionVersion = '$LATEST';
    this.invokedFunctionArn = 'arn:aws:lambda:us-east-1:000000000000:function:powertools-bench';
    this.memoryLimitInMB = '1024';
    this.awsRequestId = '00000000-0000-0000-0000-000000000000';
    this.logGroupName = '/aws/lambda/powertools-bench';
    this.logStreamName = 'bench';
    this.callbackWaitsForEmptyEventLoop = true;
  }
  getRemainingTimeInMillis() {
    return Math.max(0, this.deadline - Date.now());
  }
}

// Every call looks like the start of an invocation (lease-*, no invocation around a call).
export class FreshInvocationContext extends FakeLambdaContext {
  getRemainingTimeInMillis() {
    return FUNCTION_TIMEOUT_MS;
  }
}

// Effect runs per key, in-process (the correctness check).
export const effects = {
  calls: new Map(),
  hit(key) {
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
  },
  reset() {
    const old = this.calls;
    this.calls = new Map();
    return old;
  },
};

// The trivial business effect: count it, return a small object.
export const effect = async (order) => {
  effects.hit(order.orderId);
  return { giftCard: `gc-${order.orderId}`, amountCents: order.amountCents };
};
