package chaos

import (
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// sentTimes keeps, per key, the earliest SentTimestamp of its messages.
type sentTimes struct {
	key string // the key attribute
	mu  sync.Mutex
	at  map[string]time.Time
}

func (s *sentTimes) add(msgs []sqstypes.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		a, ok := m.MessageAttributes[s.key]
		ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
		if !ok || err != nil {
			continue
		}
		id, t := aws.ToString(a.StringValue), time.UnixMilli(ms)
		if old, ok := s.at[id]; !ok || t.Before(old) {
			s.at[id] = t
		}
	}
}

// merged fills in, from the publisher's own clock, keys whose messages the
// poller never saw (delivered only directly).
func (s *sentTimes) merged(first map[string]time.Time) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range first {
		if _, ok := s.at[id]; !ok {
			s.at[id] = t
		}
	}
	return s.at
}

// storageKeys maps the consumer's storage keys back to keys.
func storageKeys(plan Plan, s *system.System) map[string]string {
	out := make(map[string]string, len(plan.Keys))
	for _, k := range plan.Keys {
		out[s.StorageKey(k)] = k
	}
	return out
}
