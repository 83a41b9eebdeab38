package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
	"github.com/exactlyonce/sqsidem/pkg/idem/dynamostore"
	"github.com/exactlyonce/sqsidem/pkg/idem/idemtest"
)

// receipts is the consumer's receipt table, read (and, for a held key,
// written) the way idemctl does: a key's record under its storage key,
// namespace#sha256(key).
type receipts struct {
	keys  *idem.Guard  // StorageKey only: a Guard over any store makes the same keys
	store receiptStore // nil when the table cannot be read (why)
	why   string
}

// receiptStore is what the kit asks of the receipt store: dynamostore's
// operator methods.
type receiptStore interface {
	Get(ctx context.Context, skey string) (idem.Record, bool, error)
	Resolve(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (idem.Record, bool, error)
}

var _ receiptStore = (*dynamostore.Store)(nil)

func newReceipts(cfg aws.Config, st Stack, p promise) (receipts, error) {
	g, err := idem.New(idemtest.NewMemoryStore(), st.Namespace)
	if err != nil {
		return receipts{}, fmt.Errorf("kit: the namespace %q: %w", st.Namespace, err)
	}
	rc := receipts{keys: g}
	switch {
	case p.store != consumer.StoreDynamoDB:
		rc.why = fmt.Sprintf("the consumer keeps its receipts in %s (%s): the kit reads DynamoDB only", p.store, consumer.EnvStore)
	case st.ReceiptTable == "":
		rc.why = fmt.Sprintf("the stack outputs no receipt table for consumer %s (%s)", st.Consumer, consumer.OutputTable)
	default:
		store, err := dynamostore.New(dynamodb.NewFromConfig(cfg), st.ReceiptTable)
		if err != nil {
			return receipts{}, fmt.Errorf("kit: the receipt table %s: %w", st.ReceiptTable, err)
		}
		rc.store = store
	}
	return rc, nil
}

// storageKey is the key's storage key, as the consumer logs it
// (storage_key) and stores its record.
func (rc receipts) storageKey(key string) string { return rc.keys.StorageKey(key) }

// get is the key's record, read consistently; found is false for none.
func (rc receipts) get(ctx context.Context, key string) (idem.Record, bool, error) {
	if rc.store == nil {
		return idem.Record{}, false, fmt.Errorf("kit: the receipts cannot be read: %s", rc.why)
	}
	rec, found, err := rc.store.Get(ctx, rc.storageKey(key))
	if err != nil {
		return idem.Record{}, false, fmt.Errorf("kit: the receipt of %s: %w", key, err)
	}
	return rec, found, nil
}
