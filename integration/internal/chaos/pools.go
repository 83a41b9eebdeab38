package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/exactlyonce/sqsidem/functions/contract"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// pools are the instances the run adds to the stack's own: consumers for
// the fan-outs and the zombies, and as many producers as it runs at once.
//
// They run as many invocations per process as the mapping's (per). The
// fan-outs' 8 copies then share processes: in two processes, unless per is
// small enough for more, so that copies race both inside one process (one
// Guard, its cache and owed receipts) and across two.
type pools struct{ fanOut, zombie, producer *lambdarun.Pool }

func startPools(ctx context.Context, s *system.System, per, producers int, producerLog, log io.Writer) (*pools, error) {
	fn := s.Consumer.Function()
	fan := fn
	fan.Name = fn.Name + "-fanout"
	fanOut := fanOutInstances
	if per > 1 {
		fanOut = max(2, (fanOutInstances+per-1)/per)
	}
	zombie := s.Consumer.Function()
	zombie.Name = fn.Name + "-zombie"
	zombie.Env[consumer.EnvLease] = zombieLease
	zombie.Env[consumer.EnvSafetyMargin] = zombieMargin
	p := &pools{}
	var err error
	if p.fanOut, err = lambdarun.Start(ctx, fan, fanOut, lambdarun.WithLog(log)); err != nil {
		return nil, fmt.Errorf("chaos: fan-out instances: %w", err)
	}
	if p.zombie, err = lambdarun.Start(ctx, zombie, zombieInstances, lambdarun.WithLog(log)); err != nil {
		p.stop()
		return nil, fmt.Errorf("chaos: zombie instances: %w", err)
	}
	p.zombie.SetFreeze(zombieFreeze)
	producer := s.Producer.Function()
	producer.Env[contract.EnvProducerConcurrency] = producerConcurrency
	if p.producer, err = lambdarun.Start(ctx, producer, max(producers, 1), lambdarun.WithLog(producerLog)); err != nil {
		p.stop()
		return nil, fmt.Errorf("chaos: producer instances: %w", err)
	}
	return p, nil
}

func (p *pools) stop() {
	for _, pool := range []*lambdarun.Pool{p.fanOut, p.zombie, p.producer} {
		if pool != nil {
			pool.Stop()
		}
	}
}

// pollerClient is the SQS client of the poll loops and the sampler: one
// idle connection per loop (the SDK keeps 10 per host, and every request
// above that opens and closes a connection, which ElasticMQ pays for), and
// no warning when a long poll is cut short at the end of the run.
func pollerClient(c *sqs.Client, loops int) *sqs.Client {
	return sqs.New(c.Options(), func(o *sqs.Options) {
		o.Logger = logging.Nop{}
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = loops + 16
			t.MaxIdleConnsPerHost = loops + 16
		})
	})
}
