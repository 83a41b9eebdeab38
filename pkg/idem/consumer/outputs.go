package consumer

import (
	"cmp"
	"slices"
	"strings"
)

// DefaultConsumerID is the construct id whose outputs carry no prefix.
const DefaultConsumerID = "Default"

// StackOutputs are one consumer's outputs in its stack (the names above,
// after the construct id's prefix).
type StackOutputs struct {
	ID                 string // the construct id; DefaultConsumerID for the unprefixed outputs
	ReceiptTable       string
	QueueURL           string
	DeadLetterQueueURL string
	FunctionName       string
	Namespace          string // "" when the stack outputs none
	Key                string // "" when the construct's Config.Key is unset
}

// ConsumersOf reads the consumers a stack's outputs (output key to value)
// describe: one per receipt table output, sorted by construct id. A stack
// deployed before v0.3.0 is read by the legacy names (LegacyOutput*)
// wherever the current one is absent. idemctl, the kit and the template's
// suite find a consumer this way.
func ConsumersOf(outputs map[string]string) []StackOutputs {
	get := func(prefix, name, legacy string) string {
		if v, ok := outputs[prefix+name]; ok || legacy == "" {
			return v
		}
		return outputs[prefix+legacy]
	}
	seen := map[string]bool{}
	var found []StackOutputs
	for k := range outputs {
		prefix, ok := strings.CutSuffix(k, OutputTable)
		if !ok {
			prefix, ok = strings.CutSuffix(k, LegacyOutputTable)
		}
		if !ok || seen[prefix] {
			continue
		}
		seen[prefix] = true
		found = append(found, StackOutputs{
			ID:                 cmp.Or(prefix, DefaultConsumerID),
			ReceiptTable:       get(prefix, OutputTable, LegacyOutputTable),
			QueueURL:           get(prefix, OutputQueueURL, ""),
			DeadLetterQueueURL: get(prefix, OutputDeadLetterQueueURL, ""),
			FunctionName:       get(prefix, OutputFunctionName, ""),
			Namespace:          get(prefix, OutputNamespace, LegacyOutputNamespace),
			Key:                get(prefix, OutputKey, LegacyOutputKey),
		})
	}
	slices.SortFunc(found, func(a, b StackOutputs) int { return strings.Compare(a.ID, b.ID) })
	return found
}
