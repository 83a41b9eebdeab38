package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
)

// TestNotAReceiptTable: a missing table, a table keyed otherwise, and a
// table whose items are not records are refused before anything is read
// or written.
func TestNotAReceiptTable(t *testing.T) {
	h := newHarness(t)
	h.ddb.desc = nil
	h.fails(exitRuntime, `table "receipts" does not exist`, "inspect", "k")

	h = newHarness(t)
	h.ddb = newFakeDynamo(testTable, "id")
	h.fails(exitRuntime, "not a receipt table: table \"receipts\": its key is id (S)", "list")

	h = newHarness(t)
	h.ddb.put(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "customer-7"}, "name": &types.AttributeValueMemberS{Value: "x"}})
	h.fails(exitRuntime, "holds an item that is not an idem record", "stats")
	h.fails(exitRuntime, "not an idem record", "resolve", "k", "--done", "--yes")
	if h.ddb.count("UpdateItem") != 0 {
		t.Error("wrote to a table that is not a receipt table")
	}

	h = newHarness(t)
	h.ddb = newFakeDynamo(testTable, "PK", "SK")
	h.fails(exitUsage, "pass --partition-value", "list")
	h = newHarness(t)
	h.fails(exitUsage, "has no sort key", "list", "--partition-value", "IDEMPOTENCY")
}

// TestReceiptTableStatuses: a table whose sampled record has any status
// the library writes, UNKNOWN and HELD included, is a receipt table.
func TestReceiptTableStatuses(t *testing.T) {
	for _, st := range []idem.Status{idem.StatusInProgress, idem.StatusCompleted, idem.StatusFailed, idem.StatusUnknown, idem.StatusHeld} {
		h := newHarness(t)
		rec := h.completed("k")
		rec.Status = st
		h.put("k", rec)
		h.ok(nil, "stats")
	}
}

// TestCompositeKey reads a single-table design: every record under one
// partition, the storage key as the sort key, read by a query of that
// partition only.
func TestCompositeKey(t *testing.T) {
	h := newHarness(t)
	h.ddb = newFakeDynamo(testTable, "PK", "SK")
	item := func(rec idem.Record, key string) map[string]types.AttributeValue {
		rec.Key = h.guard.StorageKey(key)
		it := encode(rec)
		delete(it, "pk")
		it["PK"] = &types.AttributeValueMemberS{Value: "IDEMPOTENCY"}
		it["SK"] = &types.AttributeValueMemberS{Value: rec.Key}
		return it
	}
	h.ddb.put(item(h.completed("a"), "a"))
	h.ddb.put(item(h.failed("b", 2), "b"))
	h.ddb.put(map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "CUSTOMER"}, "SK": &types.AttributeValueMemberS{Value: "orders#x"}})
	var l struct{ Matched int }
	h.ok(&l, "list", "--partition-value", "IDEMPOTENCY")
	if l.Matched != 2 || h.ddb.count("Scan") != 0 {
		t.Fatalf("list: %d records, %d scans; want 2 by query", l.Matched, h.ddb.count("Scan"))
	}
	var in struct{ Keys []struct{ State string } }
	h.ok(&in, "inspect", "b", "--partition-value", "IDEMPOTENCY", "--no-dlq")
	if in.Keys[0].State != "failed" {
		t.Fatalf("inspect b: %+v", in)
	}
	h.ok(nil, "resolve", "b", "--done", "--yes", "--partition-value", "IDEMPOTENCY")
	got := h.ddb.get(map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "IDEMPOTENCY"}, "SK": &types.AttributeValueMemberS{Value: h.guard.StorageKey("b")}})
	if got[schema.Status].(*types.AttributeValueMemberS).Value != "COMPLETED" {
		t.Fatalf("resolve over a composite key: %v", got)
	}
}

// TestDecodeMatchesStore: a scanned item decodes (Store.Decode, as idemctl
// reads it) as dynamostore.Store.Get reads it, every attribute set or missing.
func TestDecodeMatchesStore(t *testing.T) {
	h := newHarness(t)
	full := h.failed("full", 3)
	full.Result, full.ResultOmitted = []byte("gift card 42"), false
	omitted := h.completed("omitted")
	omitted.ResultOmitted, omitted.Fingerprint = true, ""
	bare := idem.Record{Status: idem.StatusInProgress, Lease: "l"}
	store, err := dynamostore.New(h.ddb, testTable)
	if err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]idem.Record{"full": full, "omitted": omitted, "bare": bare} {
		h.put(name, rec)
		skey := h.guard.StorageKey(name)
		want, found, err := store.Get(t.Context(), skey)
		if err != nil || !found {
			t.Fatal(found, err)
		}
		got, err := store.Decode(h.record(name))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decode %+v, %v; Store.Get %+v", name, got, err, want)
		}
	}
}

// TestStorageKeys: keys hash as the Guard hashes them; --plain-keys and
// --storage-key; a storage key of another namespace is refused.
func TestStorageKeys(t *testing.T) {
	h := newHarness(t)
	h.put("order-1", h.completed("order-1"))
	var in struct {
		Keys []struct{ Key, StorageKey, State string }
	}
	h.ok(&in, "inspect", "order-1", "--no-dlq")
	if k := in.Keys[0]; k.Key != "order-1" || k.StorageKey != h.guard.StorageKey("order-1") || k.State != "completed" {
		t.Fatalf("inspect: %+v", k)
	}
	var bySKey struct{ Keys []struct{ Key, State string } }
	h.ok(&bySKey, "inspect", "--storage-key", h.guard.StorageKey("order-1"), "--no-dlq")
	if k := bySKey.Keys[0]; k.Key != "" || k.State != "completed" {
		t.Fatalf("inspect --storage-key: %+v (the business key is not known, so not printed)", k)
	}
	h.fails(exitUsage, `is not of namespace "orders"`, "inspect", "--storage-key", "refunds#abc")

	plain := h.completed("x")
	plain.Key = "orders#customer-7@example.com"
	h.ddb.put(encode(plain))
	var typed struct {
		Keys []struct{ StorageKey, State string }
	}
	h.ok(&typed, "inspect", "customer-7@example.com", "--plain-keys", "--no-dlq")
	if k := typed.Keys[0]; k.State != "completed" || k.StorageKey != "orders#customer-7@example.com" {
		t.Fatalf("inspect --plain-keys: %+v (the operator typed the key: shown)", k)
	}
	var l struct{ Records []struct{ StorageKey string } }
	h.ok(&l, "list", "--plain-keys")
	for _, r := range l.Records {
		if strings.Contains(r.StorageKey, "customer-7") {
			t.Errorf("list printed a plain key without --show-keys: %s", r.StorageKey)
		}
	}
	h.ok(&l, "list", "--plain-keys", "--show-keys")
	if !strings.Contains(h.out.String(), "orders#customer-7@example.com") {
		t.Error("list --show-keys did not print the plain key")
	}
}
