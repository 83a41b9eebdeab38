package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
)

// Publisher sends a Plan the way upstreams do: the producer Lambda
// publishes it in chunks, one run per producer instance at a time (a
// scheduler may invoke the producer as often as it likes: the stack does
// not cap it); a run that errs, times out or leaves messages unsent is
// run again for its messages, as a scheduler would, and the producer's
// guard keeps the re-runs from sending one twice. After each chunk another
// upstream sends its Raw keys again straight to the queue, its FanOut keys
// are delivered to 8 instances at once, now and then a malformed message
// goes out, and its Retrigger keys wait for a re-triggered producer run
// (the guard must skip them; some of them are still being sent by another
// run). The messages are the effect's probe's (system.Messages).
//
// Backlog bounds the messages waiting in the queue: publishing pauses above
// it, so the run measures the system at its capacity with a queue of
// bounded length (and so latencies mean something), not a queue growing
// for as long as the producer outruns the consumers.
type Publisher struct {
	Sys *system.System
	SQS *sqs.Client // for the backlog checks
	// Producer runs the producer Lambda; Runs runs go at a time.
	Producer *lambdarun.Pool
	Runs     int
	Plan     Plan
	Chunk    int
	Backlog  int
	Invoker  *Invoker // for the fan-outs
	// Logf receives the reasons of re-runs (optional).
	Logf func(format string, args ...any)

	sent, raw, malformed, retriggered, skipped, reruns, fanOuts atomic.Int64
	runs, runNanos                                              atomic.Int64

	mu           sync.Mutex
	rerunWhy     map[string]int
	unpublished  []string
	firstSend    map[string]time.Time // by key, and by message id for the malformed
	malformedIDs []string
	again        []system.Message // published, waiting for a re-triggered run
}

// PublishStats is what was published.
type PublishStats struct {
	Sent        int64 // messages the producer reported sent, re-runs included
	Raw         int64 // raw duplicate messages
	Malformed   int64
	Retriggered int64 // keys in re-triggered runs
	Skipped     int64 // of them, skipped by the producer's guard
	Reruns      int64 // producer runs repeated
	RerunWhy    map[string]int
	FanOuts     int64
	Unpublished []string      // keys no run could confirm sent
	Runs        int64         // producer invocations
	RunTime     time.Duration // their mean duration
}

// Sent returns the messages sent so far (for progress).
func (p *Publisher) Sent() int64 { return p.sent.Load() + p.raw.Load() + p.malformed.Load() }

// Stats returns the publishing counts.
func (p *Publisher) Stats() PublishStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PublishStats{
		Sent: p.sent.Load(), Raw: p.raw.Load(), Malformed: p.malformed.Load(),
		Retriggered: p.retriggered.Load(), Skipped: p.skipped.Load(), Reruns: p.reruns.Load(),
		RerunWhy: maps.Clone(p.rerunWhy), FanOuts: p.fanOuts.Load(), Unpublished: append([]string(nil), p.unpublished...),
		Runs: p.runs.Load(), RunTime: time.Duration(p.runNanos.Load() / max(p.runs.Load(), 1)),
	}
}

// FirstSend returns when each key was first handed to the producer (and
// each malformed message sent, by id); the queue's SentTimestamp is more
// precise and wins when known.
func (p *Publisher) FirstSend() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.firstSend)
}

// MalformedIDs returns the message ids of the malformed messages sent.
func (p *Publisher) MalformedIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.malformedIDs)
}

// Run publishes the whole plan and returns when every chunk, re-trigger,
// raw copy and fan-out is done, or ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	p.rerunWhy, p.firstSend = map[string]int{}, map[string]time.Time{}
	if p.Runs <= 0 {
		p.Runs = 1
	}
	chunks := slices.Collect(slices.Chunk(p.Plan.Keys, max(p.Chunk, 1)))
	// Malformed messages go out with the chunks of the first tenth (see
	// the poison keys in NewPlan).
	malformedAt := map[int]int{}
	for i := range p.Plan.Malformed {
		malformedAt[i*max(len(chunks)/10, 1)/max(p.Plan.Malformed, 1)]++
	}

	fanOut := make(chan system.Message, 1024)
	var fanWG sync.WaitGroup
	fanWG.Go(func() {
		for o := range fanOut {
			p.fanOut(ctx, o)
		}
	})
	work := make(chan int)
	var wg sync.WaitGroup
	for range p.Runs {
		wg.Go(func() {
			for i := range work {
				p.chunk(ctx, chunks[i], malformedAt[i], fanOut)
			}
		})
	}
	var err error
	for i := 0; i < len(chunks) && err == nil; i++ {
		if err = p.waitBacklog(ctx); err == nil {
			select {
			case work <- i:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
	}
	close(work)
	wg.Wait()
	p.retrigger(ctx, nil, true)
	close(fanOut)
	fanWG.Wait()
	return err
}

func (p *Publisher) chunk(ctx context.Context, keys []string, malformed int, fanOut chan<- system.Message) {
	msgs, err := p.Sys.Messages(ctx, keys...)
	if err != nil {
		p.logf("messages: %v", err)
		p.mu.Lock()
		p.unpublished = append(p.unpublished, keys...)
		p.mu.Unlock()
		return
	}
	p.markSent(keys...)
	p.produce(ctx, msgs, false)
	for _, m := range msgs {
		if p.Plan.FanOut[m.Key] {
			select {
			case fanOut <- m:
			case <-ctx.Done():
			}
		}
	}
	var raw []system.Message
	for _, m := range msgs {
		if p.Plan.Raw[m.Key] {
			raw = append(raw, m)
		}
	}
	if err := p.Sys.SendRaw(ctx, raw...); err != nil {
		p.logf("raw duplicates: %v", err)
	} else {
		p.raw.Add(int64(len(raw)))
	}
	for range malformed {
		id, err := p.Sys.SendBody(ctx, system.Malformed, "")
		if err != nil {
			p.logf("malformed message: %v", err)
			continue
		}
		p.malformed.Add(1)
		p.markSent(id)
		p.mu.Lock()
		p.malformedIDs = append(p.malformedIDs, id)
		p.mu.Unlock()
	}
	var again []system.Message
	for _, m := range msgs {
		if p.Plan.Retrigger[m.Key] {
			again = append(again, m)
		}
	}
	p.retrigger(ctx, again, false)
}

// retrigger re-runs the producer for messages it has published, as a
// scheduler that fires again would: once a chunk's worth has gathered
// (one run per chunk would double the producer's work for 15% of the
// keys), and for the rest at the end (flush).
func (p *Publisher) retrigger(ctx context.Context, msgs []system.Message, flush bool) {
	p.mu.Lock()
	p.again = append(p.again, msgs...)
	var run []system.Message
	if len(p.again) >= p.Chunk || (flush && len(p.again) > 0) {
		run, p.again = p.again, nil
	}
	p.mu.Unlock()
	if len(run) > 0 {
		p.retriggered.Add(int64(len(run)))
		p.produce(ctx, run, true)
	}
}

// produce runs the producer for msgs until every one is sent or known sent
// (duplicate), re-running it after an error, a timeout, failed messages or
// messages another run still holds. An errored run counts for nothing:
// its messages are all run again.
func (p *Publisher) produce(ctx context.Context, msgs []system.Message, retrigger bool) {
	const attempts = 20
	for try := 1; ; try++ {
		began := time.Now()
		res, err := produceOnce(ctx, p.Producer, msgs)
		p.runs.Add(1)
		p.runNanos.Add(int64(time.Since(began)))
		p.sent.Add(int64(res.Sent))
		if retrigger && try == 1 && err == nil {
			p.skipped.Add(int64(res.Duplicates + res.InProgress))
		}
		if err == nil && res.Failed == 0 && (res.InProgress == 0 || retrigger) {
			return
		}
		why := rerunReason(res, err)
		p.mu.Lock()
		p.rerunWhy[shorten(why)]++
		if try == attempts || ctx.Err() != nil {
			p.unpublished = append(p.unpublished, system.KeysOf(msgs)...)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		p.reruns.Add(1)
		// A dead run's records stay leased until its deadline.
		sleep(ctx, time.Duration(min(try, 3))*time.Second)
	}
}

// produceOnce invokes the producer with msgs and returns its answer.
func produceOnce(ctx context.Context, pool *lambdarun.Pool, msgs []system.Message) (system.ProducerResult, error) {
	payload, err := system.ProducerInput(msgs)
	if err != nil {
		return system.ProducerResult{}, err
	}
	out, err := pool.Invoke(ctx, payload)
	if err != nil {
		return system.ProducerResult{}, err
	}
	var res system.ProducerResult
	if err := json.Unmarshal(out, &res); err != nil {
		return system.ProducerResult{}, fmt.Errorf("chaos: the producer answered %q: %w", out, err)
	}
	return res, nil
}

func (p *Publisher) fanOut(ctx context.Context, m system.Message) {
	payload, err := p.Sys.Event("fanout-"+m.Key, m)
	if err != nil || ctx.Err() != nil {
		return
	}
	p.fanOuts.Add(1)
	p.Invoker.FanOutNow(ctx, payload, 8)
}

// markSent notes when ids (keys, or message ids) were first sent.
func (p *Publisher) markSent(ids ...string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if _, ok := p.firstSend[id]; !ok {
			p.firstSend[id] = now
		}
	}
}

// waitBacklog waits while more than Backlog messages wait in the queue.
func (p *Publisher) waitBacklog(ctx context.Context) error {
	if p.Backlog <= 0 {
		return nil
	}
	for {
		visible, _, err := system.QueueDepth(ctx, p.SQS, p.Sys.Queue.URL)
		if err != nil || visible <= p.Backlog {
			return ctx.Err()
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func (p *Publisher) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// rerunReason names why a producer run is repeated, without the ids that
// would make every reason unique.
func rerunReason(res system.ProducerResult, err error) string {
	var fe *lambdarun.FunctionError
	switch {
	case errors.Is(err, lambdarun.ErrTimeout):
		return "the run timed out (killed at the function timeout)"
	case errors.Is(err, lambdarun.ErrCrashed):
		return "the run crashed"
	case errors.As(err, &fe):
		return "function error " + fe.Type
	case err != nil:
		return err.Error()
	case res.Failed > 0:
		return "messages failed: " + Tidy(res.Failures[0].Reason)
	}
	return "messages in progress in another run"
}

func shorten(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
