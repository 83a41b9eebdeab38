package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/esm"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/partner"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// The zombie pool: instances whose lease (1 s) ends well inside the
// function timeout (2 s in the test profile), frozen for 1.5 s and taken
// over after 1.1 s, as in the scenario ZombieStopsAtItsLease. Two instances, so that
// a zombie never waits for a free one for long.
const (
	zombieInstances = 2
	zombieLease     = "1s"
	zombieMargin    = "100ms"
	zombieFreeze    = 1500 * time.Millisecond
	zombieTakeover  = 1100 * time.Millisecond
	fanOutInstances = 8
	// checkTimeout bounds asking the probe and reading the DLQ at the end.
	checkTimeout = 5 * time.Minute
	// producerConcurrency keeps each producer's concurrent DynamoDB
	// requests within the AWS SDK's pool of 10 idle connections per host.
	// At the default (50) every request above 10 opens a connection of its
	// own and closes it: measured, 700 new connections a second to the
	// fault proxy, CPU spent on nothing but connection set-up.
	producerConcurrency = "10"
)

// Config is one run: a mode, and in lease mode a policy.
type Config struct {
	// System says what to run; Run sets NoPoller, the mode and Log.
	System    system.Config
	Mode      string // consumer.ModeLease or consumer.ModeTransactional
	Keys      int
	Rates     Rates
	Seed      uint64
	Pollers   int // poll loops of the event source mapping
	Producers int // producer instances, one run each at a time
	Chunk     int // messages per producer run
	Backlog   int // messages waiting in the queue before publishing pauses
	// Drain bounds the wait for an empty queue once everything is sent.
	Drain time.Duration
	// LogPath receives the Lambdas' output.
	LogPath string
	// Progress, if set, gets a line every Every.
	Progress io.Writer
	Every    time.Duration
	// Emulators names the emulator processes, for the CPU account.
	Emulators map[string]int
	// StoreBackoff gives the consumers the queue's visibility timeout
	// (IDEM_VISIBILITY_TIMEOUT), as the construct does, so that a record
	// that failed on the store comes back later with each receive; false
	// runs them without it, whatever the template says, to compare.
	StoreBackoff bool
	// Outage, when it has a length, throttles every DynamoDB request of
	// the consumers for that long, from Outage.After after the first send.
	Outage Outage
	// Policy is a lease-mode run's unknown-outcome policy (Policies;
	// default PolicyReconcile); transactional mode has none.
	Policy string
	// PartnerOutage, when it has a length, takes the partner down (every
	// call and lookup refused) for that long, from PartnerOutage.After
	// after the first send (lease mode).
	PartnerOutage Outage
	// PartnerSlowFor is how late a slow partner answers (default: the
	// consumer's function timeout and a second, past any deadline of a
	// call).
	PartnerSlowFor time.Duration
	// Idemctl is the operator's tool (a build of cmd/idemctl), with which
	// the hold policy's held keys are resolved; required for PolicyHold.
	Idemctl string
	// PerProcess is how many invocations one consumer process runs at
	// once (AWS_LAMBDA_MAX_CONCURRENCY, as on Lambda Managed Instances;
	// default 1). System.Consumers is then the invocations at once, in
	// processes of PerProcess each; a kill or a timeout takes the process
	// and every invocation in it.
	PerProcess int
}

// Result is one run.
type Result struct {
	Mode        string
	Policy      string    // lease mode's unknown-outcome policy; "" in transactional mode
	Start       time.Time // the first send
	Keys        int       // plain keys
	Poison      int
	Malformed   int
	Elapsed     time.Duration // first send to drained
	Deliveries  int64
	Invocations int64
	Batches     int64 // the poller's invocations (zombies are drawn from them)
	Publish     PublishStats
	Outcomes    map[string]int
	Dynamo      map[string]int // requests by sender and operation
	DynamoFault map[string]int
	DynamoTotal int
	Events      []Event
	Samples     []Sample
	Account     Account
	// StoreBackoff is the consumers' IDEM_VISIBILITY_TIMEOUT, "" when the
	// store backoff was off.
	StoreBackoff string
	EndVisible   int // left in the queue when the run ended
	EndInFlight  int
	CPU          []CPUUse
	// Lease is the consumer's function timeout, its lease.
	Lease time.Duration
	// PerProcess is the invocations one consumer process ran at once
	// (Config.PerProcess), Processes the mapping's consumer processes.
	PerProcess, Processes int
	// Partner is the partner's count of calls and lookups when the queue
	// had drained (before any resolution); PartnerSlowFor how late a slow
	// partner answered; PartnerDown the outage as it took place, from the
	// first send (zero: none).
	Partner        partner.Stats
	PartnerSlowFor time.Duration
	PartnerDown    [2]time.Duration
	// Resolution is what became of the held keys (hold policy).
	Resolution *Resolution
	Problems   []string
}

// Name is the run's mode and, in lease mode, its policy.
func (r *Result) Name() string {
	if r.Policy == "" {
		return r.Mode
	}
	return r.Mode + "/" + r.Policy
}

// Label is Name and, with several invocations per process, how many.
func (r *Result) Label() string {
	if r.PerProcess > 1 {
		return fmt.Sprintf("%s ×%d", r.Name(), r.PerProcess)
	}
	return r.Name()
}

// CPUUse is the CPU time one part of the system used during the run.
type CPUUse struct {
	Part    string
	Seconds float64
}

// Throughput is deliveries per second from the first send to drained.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Deliveries) / r.Elapsed.Seconds()
}

// Run provisions the stack for one mode, throws the chaos at it, waits
// for the queue to drain and accounts for every key; under the hold policy
// it then resolves the held keys and sends the not-done ones once more
// (Resolution). It returns an error
// when the run could not be carried out (wrapping system.ErrMode when the
// effect does not implement the mode); a run that breaks the invariant
// returns a Result with Problems.
func Run(ctx context.Context, cfg Config) (_ *Result, err error) {
	leaseMode := cfg.Mode == consumer.ModeLease
	policy := ""
	if leaseMode {
		policy = cmp.Or(cfg.Policy, PolicyReconcile)
		if policy == PolicyHold && cfg.Idemctl == "" {
			return nil, ErrNoIdemctl
		}
	}
	logFile, err := os.Create(cfg.LogPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	lambdaLog := &LambdaLog{Out: logFile}
	plan := NewPlan(cfg.Mode[:1], cfg.Keys, cfg.Rates, cfg.Seed)
	sc := cfg.System
	sc.NoPoller, sc.Log, sc.Mode = true, lambdaLog, cfg.Mode
	sc.ConsumerEnv = maps.Clone(sc.ConsumerEnv)
	if sc.ConsumerEnv == nil {
		sc.ConsumerEnv = map[string]string{}
	}
	sc.ConsumerEnv[consumer.EnvFaultPoisonKeys] = strings.Join(plan.PoisonKeys(), ",")
	sc.ConsumerEnv[consumer.EnvVisibilityTimeout] = "" // unset, whatever the template says
	per := max(cfg.PerProcess, 1)
	if per > 1 {
		sc.ConsumerEnv[lambdarun.EnvMaxConcurrency] = strconv.Itoa(per)
		sc.Consumers = (max(sc.Consumers, 1) + per - 1) / per
	}
	if leaseMode {
		maps.Copy(sc.ConsumerEnv, PolicyEnv(policy))
	}
	sc.Partner = append(slices.Clone(sc.Partner), partner.WithSeed(cfg.Seed))
	if cfg.StoreBackoff {
		vt, err := queueVisibility(sc.Template)
		if err != nil {
			return nil, err
		}
		sc.ConsumerEnv[consumer.EnvVisibilityTimeout] = vt.String()
	}
	s, err := system.Start(ctx, sc)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := s.Close(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("chaos: close: %w", cerr)
		}
	}()
	pools, err := startPools(ctx, s, per, cfg.Producers, lambdaLog, io.MultiWriter(lambdaLog, s.Records))
	if err != nil {
		return nil, err
	}
	defer pools.stop()

	dyn := &Dynamo{Rates: cfg.Rates, ReceiptTable: s.Receipts, LeaseMode: leaseMode, Seed: cfg.Seed, Outage: cfg.Outage}
	s.Requests.SetDecider(dyn.Decider())
	inv := &Invoker{
		Context: ctx, Main: s.Consumer, Key: s.Key, FanOut: pools.fanOut, Zombie: pools.zombie, ZombieSize: zombieInstances,
		Rates: cfg.Rates, Freeze: zombieFreeze, TakeoverAfter: zombieTakeover, Events: &Events{}, Seed: cfg.Seed,
	}
	mq := pollerClient(s.SQS, cfg.Pollers)
	pub := &Publisher{Sys: s, SQS: mq, Producer: pools.producer, Runs: cfg.Producers, Plan: plan, Chunk: cfg.Chunk, Backlog: cfg.Backlog, Invoker: inv}
	sent := &sentTimes{key: s.Key, at: map[string]time.Time{}}
	poller := &esm.Poller{
		Client: mq, QueueURL: s.Queue.URL, QueueARN: s.Queue.ARN, Region: s.Stack.Region,
		BatchSize: s.Mapping.BatchSize, MaxConcurrency: cfg.Pollers, WaitTime: time.Second,
		Invoker: inv, ReportBatchItemFailures: s.Mapping.ReportBatchItemFailures,
		OnBatch: func(b esm.BatchResult) { sent.add(b.Messages) },
	}
	tl := &Timeline{SQS: mq, Queue: s.Queue.URL, DLQ: s.DLQ.URL, Every: time.Second,
		Counters: func() (int64, int64, int64) {
			out := lambdaLog.Outcomes()
			return pub.Sent(), inv.Deliveries(), int64(out["executed"] + out[Rerun] + out["unconfirmed"] + out["lease_lost"])
		}}

	lease := s.Mapping.Function.Timeout
	var pc *PartnerChaos
	if leaseMode {
		pc = &PartnerChaos{Server: s.Partner, Rates: cfg.Rates, SlowFor: cmp.Or(cfg.PartnerSlowFor, lease+time.Second), Outage: cfg.PartnerOutage}
	}

	cpu0 := cpuSnapshot(s, pools, cfg.Emulators)
	start := time.Now()
	dyn.Begin(start)
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	if pc != nil {
		bgWG.Go(func() { pc.Run(bg, start) })
	}
	bgWG.Go(func() { _ = poller.Run(bg) })
	bgWG.Go(func() { tl.Run(bg, start) })
	if cfg.Progress != nil {
		name := (&Result{Mode: cfg.Mode, Policy: policy, PerProcess: per}).Label()
		bgWG.Go(func() { progress(bg, cfg.Progress, name, tl, cfg.Every) })
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopBG()
			bgWG.Wait()
		}
	}
	defer stop()

	res := &Result{Mode: cfg.Mode, Policy: policy, Start: start, Keys: cfg.Keys, Poison: len(plan.Poison), Malformed: plan.Malformed,
		StoreBackoff: sc.ConsumerEnv[consumer.EnvVisibilityTimeout], Lease: lease, PerProcess: per, Processes: len(s.Consumer.PIDs())}
	if perr := pub.Run(ctx); perr != nil {
		res.Problems = append(res.Problems, "publishing stopped: "+perr.Error())
	}
	inv.Wait()
	dctx, cancel := context.WithTimeout(ctx, cfg.Drain)
	derr := s.WaitIdle(dctx, nil)
	cancel()
	if derr != nil {
		res.Problems = append(res.Problems, derr.Error())
	}
	res.Elapsed = time.Since(start)
	stop()
	// The checks and the resolution see the partner and DynamoDB as they
	// are when nothing goes wrong.
	var injected []partner.Injection
	var down [2]time.Time
	if pc != nil {
		pc.Stop()
		from, to := pc.Down()
		if !from.IsZero() {
			res.PartnerDown = [2]time.Duration{from.Sub(start), to.Sub(start)}
			down = [2]time.Time{from, to}
		}
		res.PartnerSlowFor, res.Partner, injected = pc.SlowFor, s.Partner.Stats(), s.Partner.Injected()
	}
	s.Requests.SetDecider(nil)
	cpu1 := cpuSnapshot(s, pools, cfg.Emulators)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err() // interrupted: clean up, no report
	}
	// The checks get time of their own, so that a run stopped by its time
	// limit is still accounted for.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
	defer cancel()
	res.EndVisible, res.EndInFlight, _ = system.QueueDepth(cctx, s.SQS, s.Queue.URL)
	if res.EndVisible+res.EndInFlight > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d messages left in the queue, %d in flight", res.EndVisible, res.EndInFlight))
	}
	applied, err := s.Applied(cctx, plan.Keys)
	if err != nil {
		return nil, err
	}
	// Hidden for longer than reading thousands may take on a loaded
	// machine: with a minute, those read first could come back before the
	// last were read (a 100,000-key hold run missed 9 held keys' messages,
	// 2026-11-27; whether this was why is what the next run tells).
	dead, err := s.DeadLettersHidden(cctx, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	res.Publish = pub.Stats()
	res.Events = inv.Events.All()
	handed := pub.FirstSend()
	keyOf := storageKeys(plan, s)
	var (
		op   *Operator
		held map[string]bool
	)
	if policy == PolicyHold {
		op = NewOperator(cfg.Idemctl, s, sc.DynamoURL, sc.SQSURL)
		skeys, err := op.Held(cctx)
		if err != nil {
			return nil, err
		}
		var strangers []string
		if held, strangers = heldKeys(skeys, keyOf); len(strangers) > 0 {
			res.Problems = append(res.Problems, fmt.Sprintf("%d held records of no key the run sent: %s", len(strangers), head(strangers)))
		}
	}
	appliedAt := map[string]time.Time{}
	for skey, at := range lambdaLog.Executed() {
		appliedAt[keyOf[skey]] = at
	}
	res.Account = Settle(Evidence{
		Plan: plan, Applied: applied, AppliedAt: appliedAt, DeadLetters: dead, Events: res.Events, Windows: lambdaLog.Windows(),
		KeyOf: keyOf, SentAt: sent.merged(handed), Handed: handed, Unpublished: res.Publish.Unpublished,
		MalformedIDs: pub.MalformedIDs(), Failures: lambdaLog.Failures(), LeaseMode: leaseMode,
		Policy: policy, PartnerFaults: injected, Held: held,
		Reruns: lambdaLog.Reruns(), PartnerDown: down, Lease: lease,
	})
	res.Problems = append(res.Problems, res.Account.Problems()...)
	res.Deliveries, res.Invocations, res.Batches = inv.Deliveries(), inv.Invocations(), inv.Batches()
	res.Outcomes = lambdaLog.Outcomes()
	res.Dynamo, res.DynamoFault, res.DynamoTotal = dyn.Counts(), dyn.Faults(), s.Requests.Total()
	res.Samples = tl.Samples()
	res.CPU = cpu1.minus(cpu0)
	if op != nil && derr != nil {
		res.Problems = append(res.Problems, "the held keys were not resolved: the queue did not drain")
		op = nil
	}
	if op != nil {
		// The resolution sends keys again and waits for them: time of
		// its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout+maxRounds*cfg.Drain)
		defer cancel()
		bodies := map[string]string{}
		for _, d := range dead {
			if _, ok := bodies[d.Key]; d.Key != "" && !ok {
				bodies[d.Key] = d.Body
			}
		}
		rv := &resolver{sys: s, op: op, plan: plan, held: res.Account.Held, bodies: bodies, pollers: cfg.Pollers, drain: cfg.Drain}
		res.Resolution = rv.run(rctx)
		res.Problems = append(res.Problems, res.Resolution.Problems...)
		// Whatever the resolution sent, no key may have had its effect
		// twice.
		after, err := s.Applied(rctx, plan.Keys)
		if err != nil {
			return nil, err
		}
		for _, k := range plan.Keys {
			if after[k] > 0 && !plan.Poison[k] {
				res.Resolution.AppliedAfter++
			}
		}
		if twice := appliedAgain(plan.Keys, applied, after); len(twice) > 0 {
			res.Problems = append(res.Problems, fmt.Sprintf("%d keys applied more than once after the resolution: %s", len(twice), head(twice)))
		}
	}
	return res, nil
}

// ErrInvariant: a run's Problems are not empty.
var ErrInvariant = errors.New("chaos: the invariant broke")
