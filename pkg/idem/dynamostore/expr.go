package dynamostore

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// An expression of this package is built once per Store and shape with the
// expression package, then reused: only its values change from call to
// call. Building it anew for every request cost more CPU than the rest of
// the Store (see docs/performance.md).
//
// It is built with a slot name in place of each value; expr then knows which
// placeholder (":0", ":1", ...) the builder gave each slot, and values fills
// them in.

// slot stands for a value in an expression built once.
type slot string

// Value slots of the expressions.
const (
	slotStatus      slot = "status"
	slotFailed      slot = "failed"
	slotUnknown     slot = "unknown"
	slotNone        slot = "none"
	slotInProgress  slot = "inProgress"
	slotLease       slot = "lease"
	slotLeaseUntil  slot = "leaseUntil"
	slotExpiresAt   slot = "expiresAt"
	slotUpdatedAt   slot = "updatedAt"
	slotNowSeconds  slot = "nowSeconds"
	slotNowMillis   slot = "nowMillis"
	slotOne         slot = "one"
	slotZero        slot = "zero"
	slotFingerprint slot = "fingerprint"
	slotResult      slot = "result"
	slotOmitted     slot = "omitted"
	slotLastError   slot = "lastError"
	slotAttempts    slot = "attempts"
	slotOldAttempts slot = "oldAttempts"
)

// marker is what a slot is built with: a value no caller can produce.
func (s slot) marker() expression.ValueBuilder { return expression.Value("\x00slot:" + string(s)) }

// expr is an expression built once.
type expr struct {
	update, condition *string
	names             map[string]string
	slots             []placeholder
}

// placeholder is a value placeholder of an expression and its slot. A
// slice, not a map: values walks it on every request.
type placeholder struct {
	ph   string
	slot slot
}

// newExpr builds b and records its placeholders.
func newExpr(b expression.Builder) (*expr, error) {
	e, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("build expression: %w", err)
	}
	x := &expr{update: e.Update(), condition: e.Condition(), names: e.Names(), slots: make([]placeholder, 0, len(e.Values()))}
	for ph, v := range e.Values() {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok || len(s.Value) < len("\x00slot:") || s.Value[:len("\x00slot:")] != "\x00slot:" {
			return nil, fmt.Errorf("build expression: value %s is not a slot", ph)
		}
		x.slots = append(x.slots, placeholder{ph, slot(s.Value[len("\x00slot:"):])})
	}
	return x, nil
}

// values fills the placeholders of x from vals; every slot must be given.
func (x *expr) values(vals map[slot]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(x.slots))
	for _, p := range x.slots {
		v, ok := vals[p.slot]
		if !ok {
			return nil, fmt.Errorf("expression: no value for slot %q", p.slot)
		}
		out[p.ph] = v
	}
	return out, nil
}

// exprCache holds the built expressions of a Store, one per shape.
type exprCache struct {
	m sync.Map // shape (comparable) → *expr
}

// get returns the expression of shape, building it with build the first
// time.
func (c *exprCache) get(shape any, build func() expression.Builder) (*expr, error) {
	if x, ok := c.m.Load(shape); ok {
		return x.(*expr), nil
	}
	x, err := newExpr(build())
	if err != nil {
		return nil, err
	}
	actual, _ := c.m.LoadOrStore(shape, x)
	return actual.(*expr), nil
}

// Attribute values.
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// Values that never change, made once and shared by every request: the SDK
// only reads a request's values.
var (
	avInProgress = str(string(idem.StatusInProgress))
	avFailed     = str(string(idem.StatusFailed))
	avUnknown    = str(string(idem.StatusUnknown))
	avNone       = str("")
	avCompleted  = str(string(idem.StatusCompleted))
	avOne        = num(1)
	avZero       = num(0)
	avTrue       = &types.AttributeValueMemberBOOL{Value: true}
)

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func bin(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
