// Command demo is `make demo`: the project's main job on local emulators.
// It starts DynamoDB Local and ElasticMQ (or uses AWS_ENDPOINT_URL),
// provisions the stack from the test profile's template once per mode the
// effect implements (lease and transactional for the template's), runs
// producer → queue → consumers with injected duplicates, one crash after
// the effect and a few messages that can never succeed, shows progress,
// and prints what happened to every key.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/exactlyonce/sqsidem/integration/internal/emu"
	"github.com/exactlyonce/sqsidem/integration/internal/lambdarun"
	"github.com/exactlyonce/sqsidem/integration/internal/system"
	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

func main() {
	var o options
	flag.IntVar(&o.keys, "keys", 300, "keys to publish per mode")
	flag.Float64Var(&o.dupRate, "duplicates", 0.3, "share of keys delivered again (re-triggered producer and raw duplicate sends)")
	flag.IntVar(&o.consumers, "consumers", 4, "consumer instances per mode")
	flag.Parse()
	if o.keys < 10 || o.dupRate < 0 || o.dupRate > 1 || o.consumers < 1 {
		fmt.Fprintln(os.Stderr, "demo: need -keys >= 10, 0 <= -duplicates <= 1, -consumers >= 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type options struct {
	keys      int
	dupRate   float64
	consumers int
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	root, err := emu.RepoRoot()
	if err != nil {
		return err
	}
	template, err := system.FindTemplate(root)
	if err != nil {
		return err
	}
	consumerBin, producerBin := filepath.Join(root, "build/host/consumer"), filepath.Join(root, "build/host/producer")
	if !exists(consumerBin) || !exists(producerBin) {
		return fmt.Errorf("no host builds in build/host (run `make build`)")
	}
	logDir := filepath.Join(root, ".cache", "logs", "demo")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	emus, err := emu.StartPair(ctx, root)
	if err != nil {
		return err
	}
	defer emus.Stop()
	dynamoURL, sqsURL := emus.DynamoURL, emus.SQSURL
	fmt.Printf("emulators ready in %.1fs: DynamoDB %s, SQS %s\n", time.Since(began).Seconds(), dynamoURL, sqsURL)

	var runs []*modeRun
	for _, mode := range consumer.Modes() {
		logFile, err := os.Create(filepath.Join(logDir, mode+".log"))
		if err != nil {
			return err
		}
		defer logFile.Close()
		r := &modeRun{mode: mode, poison: "poison-" + mode[:1]}
		r.sys, err = system.Start(ctx, system.Config{
			Template: template, DynamoURL: dynamoURL, SQSURL: sqsURL,
			ConsumerBinary: consumerBin, ProducerBinary: producerBin,
			Consumers: o.consumers, Mode: mode, Log: logFile,
			ConsumerEnv: map[string]string{consumer.EnvFaultPoisonKeys: r.poison},
		})
		if errors.Is(err, system.ErrMode) {
			fmt.Printf("%s mode skipped: %v\n", mode, err)
			continue
		}
		if err != nil {
			return err
		}
		defer r.sys.Close(context.WithoutCancel(ctx))
		runs = append(runs, r)
	}
	fmt.Printf("stack provisioned %d times from %s; logs in %s\n\n", len(runs), rel(root, template), rel(root, logDir))

	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, r := range runs {
		wg.Go(func() { errs[i] = r.drive(ctx, o) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	progress(runs, done)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, r := range runs {
		r.print(os.Stdout)
	}
	fmt.Printf("\ndemo finished in %.0fs\n", time.Since(began).Seconds())
	for _, r := range runs {
		if err := r.report.Lost(); err != nil {
			return fmt.Errorf("%s mode: %w", r.mode, err)
		}
		if r.mode == consumer.ModeTransactional && r.report.DoubleEffects != 0 {
			return fmt.Errorf("%s mode: %d double effects", r.mode, r.report.DoubleEffects)
		}
	}
	return nil
}

type modeRun struct {
	mode   string
	sys    *system.System
	poison string // its effect fails every time
	msgs   []system.Message
	// what was published
	producerSent, producerSkipped, producerReruns, rawDuplicates, unprocessable int
	crashed                                                                     string
	report                                                                      system.Report
	elapsed                                                                     time.Duration
}

// drive publishes the workload, waits until the queue is empty and checks.
func (r *modeRun) drive(ctx context.Context, o options) error {
	start := time.Now()
	s := r.sys
	msgs, err := s.Messages(ctx, system.Keys("key-"+r.mode[:1], o.keys)...)
	if err != nil {
		return err
	}
	r.msgs = msgs
	r.crashed = r.msgs[len(r.msgs)/2].Key
	var crashes sync.Once
	s.Consumer.SetFaultFunc(func(point, key string) lambdarun.Action {
		act := lambdarun.Continue
		if point == consumer.FaultAfterEffect && key == r.crashed {
			crashes.Do(func() { act = lambdarun.Kill })
		}
		return act
	})

	for chunk := range slices.Chunk(r.msgs, 20) {
		res, err := r.produce(ctx, chunk)
		if err != nil {
			return err
		}
		r.producerSent += res.Sent
	}
	// Duplicates: half from a re-triggered producer (it must skip them),
	// half raw sends from an upstream that knows nothing of the producer.
	rng := rand.New(rand.NewPCG(1, uint64(len(r.mode))))
	picks := rng.Perm(len(r.msgs))[:int(float64(len(r.msgs))*o.dupRate)]
	var again, raw []system.Message
	for i, p := range picks {
		if i%2 == 0 {
			again = append(again, r.msgs[p])
		} else {
			raw = append(raw, r.msgs[p])
		}
	}
	for chunk := range slices.Chunk(again, 20) {
		res, err := r.produce(ctx, chunk)
		if err != nil {
			return err
		}
		r.producerSent += res.Sent
		r.producerSkipped += res.Duplicates + res.InProgress
	}
	if err := s.SendRaw(ctx, raw...); err != nil {
		return err
	}
	r.rawDuplicates = len(raw)
	// Messages that can never succeed: they must end in the DLQ with a reason.
	poison, err := s.Messages(ctx, r.poison)
	if err != nil {
		return err
	}
	if err := s.SendRaw(ctx, poison...); err != nil {
		return err
	}
	malformed, err := s.SendBody(ctx, system.Malformed, "")
	if err != nil {
		return err
	}
	r.unprocessable = 2

	wctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	if err := s.WaitIdle(wctx, nil); err != nil {
		return fmt.Errorf("%s mode: %w", r.mode, err)
	}
	rep, err := s.Check(ctx, append(r.msgs, poison...), malformed)
	if err != nil {
		return err
	}
	r.report, r.elapsed = rep, time.Since(start)
	return nil
}

// produce invokes the producer and, like a scheduler, runs it again when
// it times out or leaves messages unsent: its guard keeps the re-runs from
// sending one twice.
func (r *modeRun) produce(ctx context.Context, msgs []system.Message) (system.ProducerResult, error) {
	var total system.ProducerResult
	for try := 1; ; try++ {
		res, err := r.sys.Produce(ctx, msgs)
		total.Sent += res.Sent
		if err == nil && res.Failed == 0 && res.InProgress == 0 {
			total.Duplicates += res.Duplicates
			return total, nil
		}
		if try == 5 {
			return total, fmt.Errorf("%s mode: producer still failing after %d runs: %+v, %v", r.mode, try, res, err)
		}
		r.producerReruns++
		time.Sleep(time.Duration(try) * time.Second) // an in-flight run's lease ends with its deadline
	}
}

// progress prints one line a second per mode until done.
func progress(runs []*modeRun, done <-chan struct{}) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-done:
			fmt.Println()
			return
		case <-tick.C:
		}
		var parts []string
		for _, r := range runs {
			out := r.sys.Records.Outcomes()
			parts = append(parts, fmt.Sprintf("%-13s executed %4d  duplicate %4d  in progress %3d  failed %3d",
				r.mode, out["executed"], out["duplicate"], out["in_progress"], out["failed"]+out["store_error"]+out["rejected"]+out["mismatch"]+out["lease_lost"]+out["unconfirmed"]))
		}
		fmt.Printf("[%3.0fs] %s\n", time.Since(start).Seconds(), strings.Join(parts, "  |  "))
	}
}

func (r *modeRun) print(w io.Writer) {
	rep := r.report
	fmt.Fprintf(w, "== %s mode (%.0fs) ==\n", r.mode, r.elapsed.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "  %s\t%v\n", k, v) }
	row("keys", len(r.msgs))
	row("messages sent by the producer", fmt.Sprintf("%d (re-triggered runs: %d skipped by the producer's guard; %d re-runs after a timeout)", r.producerSent, r.producerSkipped, r.producerReruns))
	row("raw duplicate messages", r.rawDuplicates)
	row("unprocessable messages", fmt.Sprintf("%d (a poison key, a malformed body)", r.unprocessable))
	row("deliveries to consumers", rep.Deliveries)
	row("duplicates suppressed", rep.Outcomes["duplicate"])
	row("in-progress retries", rep.Outcomes["in_progress"])
	row("crash injected", fmt.Sprintf("SIGKILL after the effect, before the receipt (key %s)", r.crashed))
	row("effects applied", rep.Applied)
	double := fmt.Sprint(rep.DoubleEffects)
	if rep.DoubleEffects > 0 {
		double += fmt.Sprintf(" %v: records of the killed batch that had done their effect but not written their receipt, the documented lease-mode window", rep.Doubled)
	}
	row("double effects", double)
	row("lost", len(rep.Missing))
	total := 0
	for _, n := range rep.DynamoRequests {
		total += n
	}
	ops := make([]string, 0, len(rep.DynamoRequests))
	for op, n := range rep.DynamoRequests {
		ops = append(ops, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(ops)
	if rep.Deliveries > 0 {
		row("DynamoDB requests", fmt.Sprintf("%d (%s): %.2f per delivery, incl. the producer's guard and, in transactional mode, the effect's writes (lease mode's effect calls the partner)", total, strings.Join(ops, ", "), float64(total)/float64(rep.Deliveries)))
	}
	row("dead-letter queue", len(rep.DeadLetters))
	tw.Flush()
	for _, d := range rep.DeadLetters {
		id := d.Key
		if id == "" {
			id = d.MessageID
		}
		fmt.Fprintf(w, "    %-12s after %d receives: %s\n", id, d.Receives, d.Reason)
	}
	fmt.Fprintln(w)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
