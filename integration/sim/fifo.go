package sim

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// A FIFO queue delivers the messages of a message group in the order they
// were sent, and none of a group while one of it is in flight (received,
// neither deleted nor visible again): a group's next message waits for the
// one before it to be deleted or dead-lettered. A batch holds messages of
// several groups, each group's in order. It has no per-message delay, so
// nothing may be requeued to it.

// fifoVisible is what a receive may return, each group's visible messages
// in order (up to the first in flight), the groups interleaved at random.
// q.mu is held.
func (q *queue) fifoVisible(now time.Time) []*sqsMessage {
	groups := map[string][]*sqsMessage{}
	for _, m := range q.sendOrder() {
		if !m.sent {
			continue
		}
		groups[m.Group] = append(groups[m.Group], m)
	}
	var heads [][]*sqsMessage
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		var ready []*sqsMessage
		for _, m := range groups[g] {
			if m.deleted || m.dlq {
				continue
			}
			if m.visibleAt.After(now) {
				break // in flight: the rest of its group waits
			}
			ready = append(ready, m)
		}
		if len(ready) > 0 {
			heads = append(heads, ready)
		}
	}
	var out []*sqsMessage
	for len(heads) > 0 {
		i := q.rng.IntN(len(heads))
		out = append(out, heads[i][0])
		if heads[i] = heads[i][1:]; len(heads[i]) == 0 {
			heads = slices.Delete(heads, i, i+1)
		}
	}
	return out
}

// sendOrder is the messages in the order they are sent. q.mu is held.
func (q *queue) sendOrder() []*sqsMessage {
	return slices.SortedStableFunc(slices.Values(q.msgs), func(a, b *sqsMessage) int { return cmp.Compare(a.SentAt, b.SentAt) })
}

// largestGroup is how many messages the largest message group has.
func (q *queue) largestGroup() int {
	n := map[string]int{}
	for _, m := range q.w.cfg.Messages {
		n[m.Group]++
	}
	return max(1, slices.Max(slices.Collect(maps.Values(n))))
}
