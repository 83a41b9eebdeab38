package emu

import (
	"context"
	"errors"
	"os"
	"sync"
)

// Pair is DynamoDB Local and ElasticMQ started together, or the endpoint
// AWS_ENDPOINT_URL names (LocalStack), for the commands (demo, chaos).
type Pair struct {
	DynamoURL, SQSURL string
	// Pids names the processes started: none for an endpoint given.
	Pids    map[string]int
	ddb, mq *Server
}

// StartPair starts both emulators at once, unless AWS_ENDPOINT_URL is set.
// Stop the pair when done, also on error paths after it returned.
func StartPair(ctx context.Context, root string) (*Pair, error) {
	if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
		return &Pair{DynamoURL: url, SQSURL: url}, nil
	}
	p := &Pair{}
	var ddbErr, mqErr error
	var wg sync.WaitGroup
	wg.Go(func() { p.ddb, ddbErr = StartDynamoDB(ctx, root) })
	wg.Go(func() { p.mq, mqErr = StartSQS(ctx, root) })
	wg.Wait()
	if err := errors.Join(ddbErr, mqErr); err != nil {
		p.Stop()
		return nil, err
	}
	p.DynamoURL, p.SQSURL = p.ddb.URL(), p.mq.URL()
	p.Pids = map[string]int{"DynamoDB Local (JVM)": p.ddb.Pid(), "ElasticMQ (JVM)": p.mq.Pid()}
	return p, nil
}

// Stop stops the emulators the pair started.
func (p *Pair) Stop() {
	if p.ddb != nil {
		_ = p.ddb.Stop()
	}
	if p.mq != nil {
		_ = p.mq.Stop()
	}
}
