package system

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/sqsidem/functions/consumer/effect"
)

// Probe is the effect's side of the proof: the suite never reads the
// effect's tables itself, so a fork that replaces the effect (and its
// probe, next to it) keeps every scenario. The template's is
// effect.Probe.
type Probe interface {
	// Message is a valid body for key; variant 0 always the same one, any
	// other the same key with other content.
	Message(key string, variant int) ([]byte, error)
	// Seed writes the data the effect needs to apply keys.
	Seed(ctx context.Context, keys []string) error
	// Applied returns how many times each of keys had its effect.
	Applied(ctx context.Context, keys []string) (map[string]int, error)
	// Modes are the modes the effect implements.
	Modes() []string
}

// NewProbe makes the probe of an effect whose environment env gives (the
// consumer's, as the stack resolves it), reading with db.
type NewProbe func(db *dynamodb.Client, env func(string) string) Probe

// EffectProbe is the template's effect's NewProbe: the one place the
// proof names the effect.
func EffectProbe(db *dynamodb.Client, env func(string) string) Probe { return effect.NewProbe(db, env) }

// ErrMode: the effect does not implement the mode a system was asked to
// run in. A scenario that needs the mode skips.
var ErrMode = errors.New("system: the effect does not implement the mode")
