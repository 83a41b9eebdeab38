package chaos

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/provision"
)

// queueVisibility is the visibility timeout of the queue the template's
// event source mapping reads: what the construct gives the consumer as
// IDEM_VISIBILITY_TIMEOUT, the base of its store backoff
// (sqsbatch.WithStoreBackoff). Run sets it itself, so that the backoff can
// be switched off for a run to compare with (Config.StoreBackoff).
func queueVisibility(template string) (time.Duration, error) {
	tpl, err := provision.LoadTemplate(template)
	if err != nil {
		return 0, err
	}
	var queues []string
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		var p struct {
			EventSourceArn struct {
				GetAtt []string `json:"Fn::GetAtt"`
			}
		}
		if err := json.Unmarshal(r.Properties, &p); err == nil && len(p.EventSourceArn.GetAtt) == 2 {
			queues = append(queues, p.EventSourceArn.GetAtt[0])
		}
	}
	if len(queues) != 1 || tpl.Resources[queues[0]].Type != "AWS::SQS::Queue" {
		return 0, fmt.Errorf("chaos: want one event source mapping from a queue of the template, found %v", queues)
	}
	var q struct{ VisibilityTimeout any }
	if err := json.Unmarshal(tpl.Resources[queues[0]].Properties, &q); err != nil {
		return 0, fmt.Errorf("chaos: queue %s: %w", queues[0], err)
	}
	switch v := q.VisibilityTimeout.(type) {
	case nil:
		return 30 * time.Second, nil // SQS's default
	case float64:
		return time.Duration(v) * time.Second, nil
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return time.Duration(n) * time.Second, nil
		}
	}
	return 0, fmt.Errorf("chaos: queue %s: VisibilityTimeout %v is not a number of seconds", queues[0], q.VisibilityTimeout)
}
