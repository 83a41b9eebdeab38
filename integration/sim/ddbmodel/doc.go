// Package ddbmodel is an in-memory model of the DynamoDB API, for the
// deterministic simulator: a *Server implements dynamostore.API (and
// PutItem and DeleteItem), so the real dynamostore.Store runs against it,
// and behaves as DynamoDB does for everything that Store and a
// transactional effect send. Its replies are checked against DynamoDB Local
// 3.3.1 by the differential tests of this package (build tag integration),
// and Replay lets the simulator check a schedule's requests the same way.
//
// # What is modelled
//
//   - UpdateItem (an upsert), PutItem, DeleteItem, GetItem and
//     TransactWriteItems, on tables whose key is a string partition key and
//     optionally a string sort key (CreateTable).
//   - Condition and update expressions, parsed generically (a mutated
//     expression behaves as DynamoDB would run it) and cached by text: all
//     comparators, AND, OR, NOT, BETWEEN, IN, attribute_exists,
//     attribute_not_exists, attribute_type, begins_with, contains, size;
//     SET (with +, -, if_not_exists, list_append), REMOVE, ADD, DELETE;
//     document paths with map keys and list indexes; reserved words.
//   - DynamoDB's semantics: numbers exact (math/big) and normalised as
//     DynamoDB returns them ("1.50" is 1.5), strings and binaries compared
//     bytewise, a missing attribute or different types making a comparison
//     false, every operand of an update reading the item as it was.
//   - Its validation errors, with DynamoDB Local's wording: syntax, undefined
//     or unused names and values, operand types, BETWEEN bounds, a path
//     compared with itself, overlapping update paths, key attributes, keys
//     not matching the schema, invalid numbers and sets, ReturnValues.
//   - ReturnValues (NONE, ALL_OLD, ALL_NEW, UPDATED_OLD, UPDATED_NEW: whole
//     top-level attributes, as DynamoDB Local returns them) and
//     ReturnValuesOnConditionCheckFailure ALL_OLD.
//   - Item sizes by DynamoDB's rules, measured against DynamoDB Local; the
//     400 KB limit (SetItemLimit lowers it), checked before the item is read
//     for a put and for what an update writes, after for the item an update
//     makes.
//   - Transactions: up to 100 actions, one per item, all conditions
//     evaluated against the state before, all or nothing; cancellation
//     reasons per action (ConditionalCheckFailed with the item when asked,
//     ValidationError for an invalid key, an update that fails on the item
//     or an item grown too large); ClientRequestToken idempotency (which
//     the SDK fills in on its own).
//   - Errors shaped as the SDK returns them (see errors.go), deep copies of
//     every value in and out, determinism, a mutex for concurrent use, and a
//     recorder of every request and reply (SetRecorder).
//
// # What is not
//
// Queries, scans, batch operations, projections, secondary indexes,
// streams, TTL (the simulator deletes expired items itself with a
// conditional DeleteItem), capacity and throttling, transaction conflicts,
// and the faults of a network: those are the simulator's wrapper's
// business. The model has no clock, so a ClientRequestToken is remembered
// forever instead of 10 minutes. Request limits other than the item size and
// 100 actions (expression length, 4 MB transactions, nesting depth) are not
// checked. A request the model does not implement fails with an error
// wrapping ErrNotModelled rather than with a made-up answer.
//
// # Where DynamoDB Local differs
//
// The differential tests found these differences, which Equivalent
// tolerates and the model resolves as described:
//
//   - DynamoDB Local keeps the text of numbers written by UpdateItem or
//     nested in lists and maps, and adds 1.5 and 1.5 to "3.0"; DynamoDB
//     (and the model) normalise numbers.
//   - DynamoDB Local evaluates the actions of a transaction in turn, and
//     only refuses two actions on one item once all conditions passed
//     (else it cancels); DynamoDB (and the model) refuse such a request.
//   - When an update fails on the item in a transaction (an item grown past
//     400 KB, an operand of the wrong type), DynamoDB cancels it with a
//     ValidationError reason, as the model does; DynamoDB Local refuses the
//     whole request with a ValidationException, or cancels it listing only
//     the failing action.
//   - When several actions of one update fail, DynamoDB Local reports one
//     in an order of its own; the model reports the first.
package ddbmodel
