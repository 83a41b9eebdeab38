// Powertools for AWS Lambda (TypeScript) side of `make bench`: one scenario per run.
//
//   node driver.mjs SCENARIO --endpoint URL --table NAME [options]
//
// The same scenarios, flags, JSON and exit statuses as ../py/driver.py (the
// contract is in ../README.md): one JSON object on stdout, logs on stderr;
// exit 0 ok, 1 finished but failed its check (JSON has "ok": false), 2 bad
// usage or setup (no JSON).
const T0 = performance.now(); // `cold` reports the import time from here

import { readFileSync } from 'node:fs';
import { randomBytes, createHash } from 'node:crypto';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SYSTEM = 'powertools-ts';
const SCENARIOS = ['lease-new', 'lease-dup', 'batch-new', 'batch-dup', 'cold'];
const BATCH_SIZE = 10;
const here = dirname(fileURLToPath(import.meta.url));

const log = (msg) => process.stderr.write(`powertools-driver: ${msg}\n`);

class Setup extends Error {} // setup trouble: exit 2, no JSON

const procStatusKb = (field) => {
  const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return line ? Number(line.split(/\s+/)[1]) : 0;
};

const cpuSeconds = () => {
  const u = process.cpuUsage(); // the whole process, all threads (libuv pool included)
  return (u.user + u.system) / 1e6;
};

const usage = (msg) => {
  process.stderr.write(`driver.mjs: ${msg}\nusage: node driver.mjs {${SCENARIOS.join('|')}} --endpoint URL --table NAME ` +
    '[--create-table] [-n N] [-w W] [-r R] [--processor sequential|concurrent] [--validation on|off] [--key-prefix P]\n');
  process.exit(2);
};

function parse(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        endpoint: { type: 'string' },
        table: { type: 'string' },
        'create-table': { type: 'boolean', default: false },
        messages: { type: 'string', short: 'n', default: '1000' },
        workers: { type: 'string', short: 'w' },
        events: { type: 'string', short: 'r', default: '50' },
        processor: { type: 'string', default: 'concurrent' },
        validation: { type: 'string', default: 'on' },
        'key-prefix': { type: 'string' },
      },
    });
  } catch (e) {
    usage(e.message);
  }
  const { values: v, positionals } = parsed;
  if (positionals.length !== 1 || !SCENARIOS.includes(positionals[0])) usage('one scenario expected');
  if (!v.endpoint || !v.table) usage('--endpoint and --table are required');
  if (!['sequential', 'concurrent'].includes(v.processor)) usage('--processor: sequential or concurrent');
  if (!['on', 'off'].includes(v.validation)) usage('--validation: on or off');
  const a = {
    scenario: positionals[0],
    endpoint: v.endpoint,
    table: v.table,
    createTable: v['create-table'],
    messages: Number(v.messages),
    events: Number(v.events),
    processor: v.processor,
    validation: v.validation,
    keyPrefix: v['key-prefix'] ?? `pt-${process.pid}-${randomBytes(4).toString('hex')}`,
  };
  const isBatch = a.scenario.startsWith('batch');
  a.workers = v.workers !== undefined ? Number(v.workers) : isBatch && a.processor === 'concurrent' ? BATCH_SIZE : 1;
  if (isBatch && a.processor === 'sequential' && a.workers !== 1) usage('--processor sequential: --workers must be 1');
  if (isBatch && a.processor === 'concurrent' && a.workers !== BATCH_SIZE)
    usage(`--processor concurrent runs all ${BATCH_SIZE} records of an event at once (Promise.all): --workers must be ${BATCH_SIZE}`);
  for (const k of ['messages', 'workers', 'events']) if (!(Number.isInteger(a[k]) && a[k] > 0)) usage(`--${k} must be a positive integer`);
  return a;
}

function configureEnv(a) {
  process.env.BENCH_TABLE = a.table;
  process.env.BENCH_ENDPOINT = a.endpoint;
  process.env.BENCH_MAX_POOL = String(a.workers);
  process.env.BENCH_VALIDATION = a.validation;
  // Dummy credentials and a fixed region whatever the caller's environment
  // holds (a profile, a session token, real keys): DynamoDB Local only.
  for (const v of ['AWS_PROFILE', 'AWS_DEFAULT_PROFILE', 'AWS_SESSION_TOKEN', 'AWS_SECURITY_TOKEN']) delete process.env[v];
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: 'us-east-1',
    AWS_CONFIG_FILE: '/dev/null', // no shared config files
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_EC2_METADATA_DISABLED: 'true', // no IMDS probing
  });
}

const pkgVersion = (name) => {
  try {
    return JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
};

const versions = () => ({
  node: process.versions.node,
  '@aws-lambda-powertools/idempotency': pkgVersion('@aws-lambda-powertools/idempotency'),
  '@aws-lambda-powertools/batch': pkgVersion('@aws-lambda-powertools/batch'),
  '@aws-sdk/client-dynamodb': pkgVersion('@aws-sdk/client-dynamodb'),
});

// Counts the HTTP requests the SDK sends, per operation. The deserialize step
// runs once per attempt (inside the retry middleware), so retries count.
function requestCounter(client) {
  const byOp = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = String(context.commandName).replace(/Command$/, ''); // PutItemCommand -> PutItem, as botocore names it
      byOp[op] = (byOp[op] ?? 0) + 1;
      return next(args);
    },
    { step: 'deserialize', name: 'benchRequestCounter', priority: 'low' },
  );
  return { snapshot: () => ({ ...byOp }) };
}

const delta = (after, before) =>
  Object.fromEntries(Object.keys(after).sort().map((k) => [k, after[k] - (before[k] ?? 0)]).filter(([, v]) => v));

async function createTable(client, table) {
  const { CreateTableCommand, waitUntilTableExists } = await import('@aws-sdk/client-dynamodb');
  await client.send(new CreateTableCommand({
    TableName: table,
    AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }));
  await waitUntilTableExists({ client, maxWaitTime: 30, minDelay: 1 }, { TableName: table });
}

const order = (key) => ({ orderId: key, customer: 'c-1', amountCents: 1234 });
const expectedResult = (key) => ({ giftCard: `gc-${key}`, amountCents: 1234 });

// --- lease-* ------------------------------------------------------------------

// Calls call(key) for every key from `workers` concurrent loops pulling from one list.
async function runPool(workers, keys, call) {
  let next = 0;
  let errors = 0;
  let first = null;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      try {
        await call(key);
      } catch (e) {
        errors++;
        first ??= `${key}: ${e?.name}: ${e?.message}`;
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { errors, first };
}

function checkEffects(isNew, keys, calls, errors, first) {
  if (errors) return `${errors} calls failed, first: ${first}`;
  if (isNew) {
    const bad = keys.filter((k) => calls.get(k) !== 1);
    if (bad.length || calls.size !== keys.length)
      return `${bad.length} of ${keys.length} keys did not run their effect exactly once (e.g. ${bad.slice(0, 3)}), ${calls.size} keys ran`;
  } else if (calls.size) {
    return `${[...calls.values()].reduce((x, y) => x + y, 0)} effect calls on duplicates (e.g. ${[...calls.keys()].slice(0, 3)})`;
  }
  return null;
}

async function scenarioLease(a, out) {
  const common = await import('./common.mjs');
  const lease = await import('./lease.mjs');
  const counter = requestCounter(common.client);
  if (a.createTable) await createTable(common.client, a.table);

  const callNew = async (key) => {
    const got = await lease.processOrder(order(key));
    if (!isDeepStrictEqual(got, expectedResult(key))) throw new Error(`result ${JSON.stringify(got)}`);
  };
  const callDup = async (key) => {
    const got = await lease.processOrder(order(key)); // the stored result, replayed
    if (!isDeepStrictEqual(got, expectedResult(key))) throw new Error(`replayed result ${JSON.stringify(got)}`);
  };

  // Warm-up, not measured: client, sockets (one new key per worker, so all W
  // get opened), JIT, Powertools' lazy configuration, and the duplicate path.
  const warm = Array.from({ length: a.workers }, (_, i) => `${a.keyPrefix}-warm-${i}`);
  for (const call of [callNew, callDup]) {
    const r = await runPool(a.workers, warm, call);
    if (r.errors) throw new Setup(`warm-up failed: ${r.first}`);
  }

  const keys = Array.from({ length: a.messages }, (_, i) => `${a.keyPrefix}-${String(i).padStart(7, '0')}`);
  if (a.scenario === 'lease-dup') {
    log(`seeding ${keys.length} keys (not measured)`);
    const r = await runPool(a.workers, keys, callNew);
    if (r.errors) throw new Setup(`seeding failed: ${r.errors} errors, first: ${r.first}`);
  }
  common.effects.reset();

  const call = a.scenario === 'lease-new' ? callNew : callDup;
  const req0 = counter.snapshot();
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  const { errors, first } = await runPool(a.workers, keys, call); // the measured loop
  const t1 = performance.now();
  const cpu1 = cpuSeconds();
  const req1 = counter.snapshot();

  Object.assign(out, { seconds: (t1 - t0) / 1000, cpu_seconds: cpu1 - cpu0, errors, requests: delta(req1, req0) });
  out.requests_total = counter.snapshot(); // the whole run: table, warm-up, seeding, loop
  return checkEffects(a.scenario.endsWith('-new'), keys, common.effects.reset(), errors, first);
}

// --- batch-* --------------------------------------------------------------------

function sqsEvent(keys, salt) {
  const now = String(Date.now());
  return {
    Records: keys.map((key, i) => {
      const body = JSON.stringify(order(key));
      return {
        messageId: `${salt}-${String(i).padStart(2, '0')}-${randomBytes(8).toString('hex')}`,
        receiptHandle: `AQEB${randomBytes(48).toString('hex')}`,
        body,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: now,
          SenderId: 'AIDAIENQZJOLO23YVJ4VO',
          ApproximateFirstReceiveTimestamp: now,
        },
        messageAttributes: {},
        md5OfBody: createHash('md5').update(body).digest('hex'),
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:orders',
        awsRegion: 'us-east-1',
      };
    }),
  };
}

async function scenarioBatch(a, out) {
  const common = await import('./common.mjs');
  const consumer = await import('./consumer.mjs');
  const counter = requestCounter(common.client);
  if (a.createTable) await createTable(common.client, a.table);
  const handler = a.processor === 'concurrent' ? consumer.handler : consumer.sequentialHandler;

  const runEvents = async (events) => {
    let failed = 0;
    let first = null;
    for (const ev of events) {
      const resp = await handler(ev, new common.FakeLambdaContext()); // a fresh invocation per event
      const items = resp?.batchItemFailures ?? [];
      failed += items.length;
      if (items.length) first ??= `batchItemFailures: ${JSON.stringify(items.slice(0, 3))}`;
    }
    return { failed, first };
  };
  const eventsFor = (keys, salt) => {
    const evs = [];
    for (let i = 0; i < keys.length; i += BATCH_SIZE) evs.push(sqsEvent(keys.slice(i, i + BATCH_SIZE), `${salt}${i / BATCH_SIZE}`));
    return evs;
  };

  // Warm-up, not measured: one new event and the same again (dup path).
  const warm = Array.from({ length: BATCH_SIZE }, (_, i) => `${a.keyPrefix}-warm-${i}`);
  for (const salt of ['warm-new', 'warm-dup']) {
    const r = await runEvents(eventsFor(warm, salt));
    if (r.failed) throw new Setup(`warm-up failed: ${r.first}`);
  }

  const keys = Array.from({ length: a.events * BATCH_SIZE }, (_, i) => `${a.keyPrefix}-${String(i).padStart(7, '0')}`);
  if (a.scenario === 'batch-dup') {
    log(`seeding ${keys.length} keys in ${a.events} events (not measured)`);
    const r = await runEvents(eventsFor(keys, 'seed'));
    if (r.failed) throw new Setup(`seeding failed: ${r.failed} record failures, first: ${r.first}`);
  }
  const events = eventsFor(keys, 'run'); // built before the clock starts
  common.effects.reset();

  const req0 = counter.snapshot();
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  const { failed, first } = await runEvents(events); // the measured loop
  const t1 = performance.now();
  const cpu1 = cpuSeconds();
  const req1 = counter.snapshot();

  Object.assign(out, {
    seconds: (t1 - t0) / 1000,
    cpu_seconds: cpu1 - cpu0,
    errors: failed,
    per_event_seconds: (t1 - t0) / 1000 / a.events,
    events: a.events,
    batch_size: BATCH_SIZE,
    requests: delta(req1, req0),
    requests_total: counter.snapshot(),
  });
  return checkEffects(a.scenario.endsWith('-new'), keys, common.effects.reset(), failed, first);
}

async function main(argv) {
  const a = parse(argv);
  configureEnv(a);

  if (a.scenario === 'cold') {
    await import('./consumer.mjs'); // client + persistence layer + handler: as a Lambda init
    const ready = performance.now();
    const out = {
      system: SYSTEM, scenario: 'cold', workers: a.workers, messages: 0,
      seconds: (ready - T0) / 1000, // in-process: driver start -> ready (excludes Node's own start-up)
      process_seconds: ready / 1000, // performance.now() counts from process start (timeOrigin)
      cpu_seconds: cpuSeconds(),
      rss_kb: procStatusKb('VmRSS'), rss_peak_kb: procStatusKb('VmHWM'),
      errors: 0, ok: true, versions: versions(),
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  }

  const out = {
    system: SYSTEM, scenario: a.scenario, workers: a.workers,
    messages: a.scenario.startsWith('lease') ? a.messages : a.events * BATCH_SIZE,
    validation: a.validation,
  };
  if (a.scenario.startsWith('batch')) {
    out.processor = a.processor;
    out.processor_impl = a.processor === 'concurrent' ? 'BatchProcessor(processInParallel: true)' : 'BatchProcessor(processInParallel: false)';
  }
  let failure;
  try {
    failure = await (a.scenario.startsWith('lease') ? scenarioLease : scenarioBatch)(a, out);
  } catch (e) {
    if (e instanceof Setup) log(e.message);
    else process.stderr.write(`${e?.stack ?? e}\n`);
    return 2;
  }
  out.rss_kb = procStatusKb('VmRSS');
  out.rss_peak_kb = procStatusKb('VmHWM');
  out.msgs_per_second = out.seconds > 0 ? out.messages / out.seconds : null;
  out.cpu_seconds_per_message = out.cpu_seconds / out.messages;
  out.requests_per_message = Object.values(out.requests).reduce((x, y) => x + y, 0) / out.messages;
  out.ok = failure === null;
  if (failure) {
    out.failure = failure;
    log(`FAILED: ${failure}`);
  }
  out.versions = versions();
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return failure === null ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (e) => { process.stderr.write(`${e?.stack ?? e}\n`); process.exitCode = 2; },
);
