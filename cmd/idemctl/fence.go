package main

import (
	"context"
	"fmt"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// settle writes what an operator decided about the record under skey with
// the store's Resolve (dynamostore and redisstore write it alike): only if
// the record is still exactly old — the same lease token (the fencing
// token), status, attempts and update time. The token alone is not
// enough: an attempt that outlived its lease (a zombie) still holds it,
// and a release fenced by the token alone would turn its late receipt
// into FAILED and let a copy run the effect again. A record that changed
// is errChanged, with the record as it is now, and nothing is written.
//
// to COMPLETED is a receipt without a result, marked resolved, under a
// new token of its own, so that the zombie's late release cannot undo it.
// to FAILED keeps the token: if the zombie's receipt lands after all, the
// effect did happen and the receipt is the truth.
//
// expires is the record's expiry after the write: a record without one (a
// HELD record, which never expires until it is settled) gets it, so that
// the receipt or the release lasts as long as the consumer's own would;
// any other keeps its own.
func (rc *receipts) settle(ctx context.Context, skey string, old idem.Record, to idem.Status, expires, now time.Time) (idem.Record, error) {
	rec, changed, err := rc.Resolve(ctx, skey, old, to, expires, now)
	switch {
	case err != nil:
		return idem.Record{}, err
	case changed && rec.Status == "":
		return idem.Record{}, fmt.Errorf("%w: it is gone", errChanged)
	case changed:
		return rec, errChanged
	}
	return rec, nil
}
