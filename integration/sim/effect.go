package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
)

// errEffect is a failing effect's error.
var errEffect = errors.New("sim: the effect failed")

// effect is the lease-mode effect: a point (the scheduler may fail it,
// make it panic, crash or freeze the process before or just after it),
// then, if its context still holds, the effect takes place — an effect
// honours its context. In a world of remote effects it is a call to the
// remote system instead (remote.go).
func (p *process) effect(ctx context.Context, key string, msg events.SQSMessage) ([]byte, error) {
	if p.w.cfg.Remote {
		return p.remoteEffect(ctx)
	}
	actor := p.w.actorOf(ctx)
	v, dead := p.at(actor, kindEffect)
	switch {
	case dead:
		return nil, errDead
	case p.w.check.message(actor).Key == p.w.cfg.Poison:
		return nil, fmt.Errorf("%w: poison", errEffect)
	case v.fault == faultEffect:
		return nil, errEffect
	case v.fault == faultPanic:
		panic("sim: the effect panics")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lease, _ := idem.LeaseFromContext(ctx)
	value := p.w.check.effect(p, actor, lease.Token)
	if p.crashAfter(v, "the effect") {
		return nil, errDead
	}
	return value, nil
}

// txEffect is the transactional effect: its writes, computed at a point,
// add one to the key's ledger item when the commit applies them. A poison
// key's writes include a condition that never holds (the transaction is
// aborted by the effect's own write).
func (p *process) txEffect(ctx context.Context, key string, msg events.SQSMessage) (idem.TxEffect, error) {
	actor := p.w.actorOf(ctx)
	v, dead := p.at(actor, kindEffect)
	switch {
	case dead:
		return idem.TxEffect{}, errDead
	case v.fault == faultEffect:
		return idem.TxEffect{}, errEffect
	case v.fault == faultPanic:
		panic("sim: the effect panics")
	}
	if err := ctx.Err(); err != nil {
		return idem.TxEffect{}, err
	}
	item := p.w.check.message(actor).Key // the ledger counts the item's effects, whatever key they ran under
	writes := p.w.store.(ledgerWriter).ledgerWrites(item, item == p.w.cfg.Poison)
	value := []byte(key + "=tx")
	if p.w.check.message(actor).Large {
		value = []byte(strings.Repeat(string(value), 8))
	}
	if p.crashAfter(v, "computing its writes") {
		return idem.TxEffect{}, errDead
	}
	return idem.TxEffect{Writes: writes, Result: value}, nil
}

// ledgerWriter is a backend whose effects can be transactional writes.
type ledgerWriter interface {
	ledgerWrites(key string, poison bool) []any
}
