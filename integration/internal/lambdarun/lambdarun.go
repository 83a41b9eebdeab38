// Package lambdarun runs real Lambda binaries (built with -tags lambda.norpc,
// calling lambda.Start) as local child processes behind a per-instance AWS
// Lambda Runtime API server, so integration tests exercise the same code path
// as production: the aws-lambda-go runtime loop, ctx deadlines, error payloads
// and process deaths.
//
// Each instance is one process with its own 127.0.0.1 endpoint and handles one
// invocation at a time, as a Lambda execution environment does, or up to
// Function.Concurrency at once, as one of Lambda Managed Instances does
// (AWS_LAMBDA_MAX_CONCURRENCY: aws-lambda-go then long-polls /next from that
// many goroutines). Timeouts and crashes kill the process group, and with it
// every invocation in flight in it, and start a fresh process (a new "cold
// start"), which is exactly the situation the exactly-once machinery must
// survive.
//
// The server also answers POST /harness/fault?point=&key= so a function can
// ask the harness, synchronously, whether it should die at a named point
// (FAULT_HOOK_URL is set per instance). See Pool.SetFaultFunc, and
// WithInvokeFaults to doom a single invocation (at a fault point, or after
// a delay wherever the function then is).
package lambdarun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/exactlyonce/sqsidem/pkg/idem/consumer"
)

// Errors returned by Pool.Invoke. Function errors are *FunctionError.
var (
	// ErrTimeout: the invocation ran past its deadline (or the runtime never
	// became ready within the init timeout); the instance was SIGKILLed and
	// restarted.
	ErrTimeout = errors.New("lambdarun: task timed out")
	// ErrCrashed: the process exited (or was killed at a fault point) before
	// answering; the instance was restarted.
	ErrCrashed = errors.New("lambdarun: runtime exited")
	// ErrStopped: the pool was stopped.
	ErrStopped = errors.New("lambdarun: pool stopped")
)

const (
	apiPrefix = "/2018-06-01/runtime"
	// maxResponse mirrors Lambda's 6 MB synchronous response limit.
	maxResponse = 6 * 1024 * 1024

	hdrRequestID   = "Lambda-Runtime-Aws-Request-Id"
	hdrDeadline    = "Lambda-Runtime-Deadline-Ms"
	hdrFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	hdrTraceID     = "Lambda-Runtime-Trace-Id"
	hdrErrorType   = "Lambda-Runtime-Function-Error-Type"
	hdrErrorBody   = "Lambda-Runtime-Function-Error-Body"
)

// FunctionError is an error the function reported through the Runtime API
// (a returned error or a recovered panic), parsed from its error payload.
type FunctionError struct {
	Type    string
	Message string
	Payload []byte // raw error document as posted by the runtime
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("lambdarun: function error %s: %s", e.Type, e.Message)
}

// Action is the harness's answer at a fault point.
type Action int

const (
	// Continue lets the function carry on (the hook returns 204).
	Continue Action = iota
	// Kill SIGKILLs the instance's process group instead of answering.
	Kill
	// Freeze SIGSTOPs the instance's process group, answers, and SIGCONTs
	// it after the pool's freeze duration (SetFreeze), or when the pool's
	// release channel is closed (SetFreezeUntil): a process stalled
	// mid-invocation (a long GC pause, a frozen sandbox), the way a lease
	// runs out under a live process and makes a zombie.
	Freeze
)

// Function describes one Lambda function to run.
type Function struct {
	Name     string
	Binary   string // path to a host binary built with -tags lambda.norpc
	Env      map[string]string
	Timeout  time.Duration // default 3s, as Lambda
	MemoryMB int           // default 128; only reported to the runtime
	// Concurrency is how many invocations one process runs at once, set as
	// AWS_LAMBDA_MAX_CONCURRENCY (Lambda Managed Instances' per-environment
	// concurrency). 0: Env's AWS_LAMBDA_MAX_CONCURRENCY if it is set, else
	// 1, one at a time, and the variable is not set.
	Concurrency int
}

// EnvMaxConcurrency is the variable aws-lambda-go reads for how many
// invocations it runs at once in one process.
const EnvMaxConcurrency = "AWS_LAMBDA_MAX_CONCURRENCY"

// Option configures Start.
type Option func(*options)

type options struct {
	log         io.Writer
	region      string
	accountID   string
	initTimeout time.Duration
}

// WithLog sends every instance's stdout/stderr (line-prefixed with the
// instance id and pid) and harness events to w. Default: discarded.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// WithRegion sets AWS_REGION and the region in the invoked function ARN.
// Default: $AWS_REGION, else us-east-1.
func WithRegion(r string) Option { return func(o *options) { o.region = r } }

// WithAccountID sets the account in the invoked function ARN (default 000000000000).
func WithAccountID(a string) Option { return func(o *options) { o.accountID = a } }

// WithInitTimeout bounds how long a fresh process may take to ask for its
// first invocation (Lambda's init phase limit is 10s, the default).
func WithInitTimeout(d time.Duration) Option { return func(o *options) { o.initTimeout = d } }

// FaultCount counts calls to one fault point.
type FaultCount struct{ Calls, Kills int64 }

// Stats is a snapshot of the pool's counters.
type Stats struct {
	Invocations int64 // Invoke calls that got an instance
	Errors      int64 // function errors (*FunctionError)
	Timeouts    int64
	Crashes     int64 // includes fault kills during an invocation
	Restarts    int64 // process starts after the initial ones
	FaultCalls  int64
	FaultKills  int64
	FaultPoints map[string]FaultCount
	// MaxInFlight is the most invocations one process held at once (at
	// most Function.Concurrency): above 1, invocations did share a process.
	MaxInFlight int64
}

// Pool is a set of running instances of one function.
type Pool struct {
	fn        Function
	opts      options
	arn       string
	instances []*instance
	free      chan *instance
	done      chan struct{}
	stopOnce  sync.Once
	fault     atomic.Pointer[func(point, key string) Action]
	freeze    atomic.Int64 // Freeze duration, ns
	inFlight  atomic.Int64 // Stats.MaxInFlight
	release   atomic.Pointer[<-chan struct{}]
	logMu     sync.Mutex

	invocations, errs, timeouts, crashes, restarts, faultCalls, faultKills atomic.Int64

	statsMu     sync.Mutex
	faultPoints map[string]FaultCount
}

type result struct {
	out []byte
	err error
}

type invocation struct {
	id      string
	payload []byte
	faults  InvokeFaults // from the Invoke context (WithInvokeFaults)
	// Fields below are guarded by instance.mu.
	deadline  time.Time
	abandoned bool
	started   chan struct{} // closed when handed to the runtime via /next
	done      chan result   // buffered 1: the runtime's answer
}

// process is one OS process of an instance; a restart makes a new one.
type process struct {
	cmd     *exec.Cmd
	pid     int
	began   time.Time
	exited  chan struct{} // closed after Wait returns
	ready   chan struct{} // closed on the first /next
	readyMu sync.Once
	// Guarded by instance.mu.
	active     map[string]*invocation // by request id: taken, not answered
	initErr    *FunctionError
	faultPoint string
	faultKey   string
	timedOut   string // the request whose timeout killed the process
}

type instance struct {
	pool *Pool
	id   int
	addr string
	srv  *http.Server
	work chan *invocation // buffered Function.Concurrency; Invoke puts, /next takes

	mu       sync.Mutex
	proc     *process
	inflight int // Invokes on the instance; while any, they, not the exit watcher, restart
	stopping bool
}

// Start launches instances processes of fn.Binary and waits until each has
// asked for its first invocation. ctx bounds only the start-up; the processes
// live until Stop.
func Start(ctx context.Context, fn Function, instances int, opts ...Option) (*Pool, error) {
	if instances < 1 {
		return nil, fmt.Errorf("lambdarun: instances must be >= 1, got %d", instances)
	}
	if fn.Name == "" {
		fn.Name = filepath.Base(fn.Binary)
	}
	if _, err := os.Stat(fn.Binary); err != nil {
		return nil, fmt.Errorf("lambdarun: function %s: %w", fn.Name, err)
	}
	if fn.Timeout <= 0 {
		fn.Timeout = 3 * time.Second
	}
	if fn.MemoryMB <= 0 {
		fn.MemoryMB = 128
	}
	if fn.Concurrency == 0 {
		fn.Concurrency, _ = strconv.Atoi(fn.Env[EnvMaxConcurrency])
	}
	fn.Concurrency = max(fn.Concurrency, 1)
	o := options{log: io.Discard, region: os.Getenv("AWS_REGION"), accountID: "000000000000", initTimeout: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.region == "" {
		o.region = "us-east-1"
	}
	if o.log == nil {
		o.log = io.Discard
	}
	p := &Pool{
		fn:          fn,
		opts:        o,
		arn:         fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", o.region, o.accountID, fn.Name),
		free:        make(chan *instance, instances*fn.Concurrency),
		done:        make(chan struct{}),
		faultPoints: map[string]FaultCount{},
	}
	for i := range instances {
		in, err := p.newInstance(i)
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.instances = append(p.instances, in)
	}
	timer := time.NewTimer(o.initTimeout)
	defer timer.Stop()
	for _, in := range p.instances {
		in.mu.Lock()
		proc := in.proc
		in.mu.Unlock()
		select {
		case <-proc.ready:
		case <-proc.exited:
			p.Stop()
			return nil, fmt.Errorf("lambdarun: %s#%d exited during init (%s): %w", fn.Name, in.id, proc.cmd.ProcessState, ErrCrashed)
		case <-timer.C:
			p.Stop()
			return nil, fmt.Errorf("lambdarun: %s#%d not ready after %s: %w", fn.Name, in.id, o.initTimeout, ErrTimeout)
		case <-ctx.Done():
			p.Stop()
			return nil, fmt.Errorf("lambdarun: starting %s: %w", fn.Name, ctx.Err())
		}
	}
	// An instance is free as many times as it runs invocations at once.
	for range fn.Concurrency {
		for _, in := range p.instances {
			p.free <- in
		}
	}
	return p, nil
}

// Name returns the function name.
func (p *Pool) Name() string { return p.fn.Name }

// ARN returns the function ARN sent as Lambda-Runtime-Invoked-Function-Arn.
func (p *Pool) ARN() string { return p.arn }

// SetFaultFunc installs the decision function for fault points (nil: always
// Continue). It is called concurrently from instance servers.
func (p *Pool) SetFaultFunc(f func(point, key string) Action) {
	if f == nil {
		p.fault.Store(nil)
		return
	}
	p.fault.Store(&f)
}

// SetFreeze sets how long the Freeze action stops a process (default 1s).
func (p *Pool) SetFreeze(d time.Duration) { p.freeze.Store(int64(d)) }

// SetFreezeUntil makes the Freeze action stop a process until release is
// closed (or the pool stops), whatever SetFreeze says: a test that needs a
// process stalled until something else has happened waits for that event,
// not for a duration that happens to suffice. Close release in the test's
// cleanup too, so that a failed test does not leave the process stopped.
func (p *Pool) SetFreezeUntil(release <-chan struct{}) { p.release.Store(&release) }

// Stats returns a snapshot of the counters.
func (p *Pool) Stats() Stats {
	p.statsMu.Lock()
	fp := make(map[string]FaultCount, len(p.faultPoints))
	for k, v := range p.faultPoints {
		fp[k] = v
	}
	p.statsMu.Unlock()
	return Stats{
		Invocations: p.invocations.Load(),
		Errors:      p.errs.Load(),
		Timeouts:    p.timeouts.Load(),
		Crashes:     p.crashes.Load(),
		Restarts:    p.restarts.Load(),
		FaultCalls:  p.faultCalls.Load(),
		FaultKills:  p.faultKills.Load(),
		FaultPoints: fp,
		MaxInFlight: p.inFlight.Load(),
	}
}

// PIDs returns the current process id of each instance (0 if none).
func (p *Pool) PIDs() []int {
	pids := make([]int, len(p.instances))
	for i, in := range p.instances {
		in.mu.Lock()
		if in.proc != nil {
			pids[i] = in.proc.pid
		}
		in.mu.Unlock()
	}
	return pids
}

// Invoke runs one synchronous invocation on a free instance (one running
// fewer than Function.Concurrency invocations), waiting for one if all are
// busy. If ctx ends after the runtime has picked the invocation
// up, Invoke returns ctx.Err() but the invocation keeps running to completion
// (or timeout) and its instance stays busy meanwhile, as in Lambda, where a
// caller hanging up does not stop the function.
func (p *Pool) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var in *instance
	select {
	case in = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, ErrStopped
	}
	p.invocations.Add(1)
	inv := &invocation{
		id:      newRequestID(),
		payload: payload,
		faults:  invokeFaultsFrom(ctx),
		started: make(chan struct{}),
		done:    make(chan result, 1),
	}
	resc := make(chan result, 1)
	go func() {
		out, err := in.run(ctx, inv)
		var fe *FunctionError
		switch {
		case errors.As(err, &fe):
			p.errs.Add(1)
		case errors.Is(err, ErrTimeout):
			p.timeouts.Add(1)
		case errors.Is(err, ErrCrashed):
			p.crashes.Add(1)
		}
		resc <- result{out, err}
		p.free <- in // cap == len(instances) * Concurrency: never blocks
	}()
	select {
	case r := <-resc:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop kills every instance's process group and closes the servers. It is
// idempotent and safe to call concurrently with Invoke.
func (p *Pool) Stop() {
	p.stopOnce.Do(func() {
		close(p.done)
		var procs []*process
		for _, in := range p.instances {
			in.mu.Lock()
			in.stopping = true
			if in.proc != nil {
				procs = append(procs, in.proc)
				kill(in.proc)
			}
			in.mu.Unlock()
		}
		for _, proc := range procs {
			select {
			case <-proc.exited:
			case <-time.After(5 * time.Second):
			}
		}
		for _, in := range p.instances {
			_ = in.srv.Close()
		}
	})
}

func (p *Pool) logf(format string, args ...any) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.opts.log, "%s [%s harness] %s\n", time.Now().Format("15:04:05.000"), p.fn.Name, fmt.Sprintf(format, args...))
}

func (p *Pool) countFault(point string, kill bool) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	c := p.faultPoints[point]
	if kill {
		c.Kills++
		p.faultKills.Add(1)
	} else {
		c.Calls++
		p.faultCalls.Add(1)
	}
	p.faultPoints[point] = c
}

func (p *Pool) newInstance(id int) (*instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdarun: listen: %w", err)
	}
	in := &instance{pool: p, id: id, addr: ln.Addr().String(), work: make(chan *invocation, p.fn.Concurrency)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"/invocation/next", in.handleNext)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/response", in.handleResponse)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/error", in.handleError)
	mux.HandleFunc("POST "+apiPrefix+"/init/error", in.handleInitError)
	mux.HandleFunc("POST /harness/fault", in.handleFault)
	// aws-lambda-go registers an internal extension when SIGTERM handlers are
	// enabled; answer it so such functions start too.
	mux.HandleFunc("POST /2020-01-01/extension/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Lambda-Extension-Identifier", newRequestID())
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	})
	mux.HandleFunc("GET /2020-01-01/extension/event/next", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never any events: block until the process dies
	})
	in.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = in.srv.Serve(ln) }()
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.spawnLocked(false); err != nil {
		_ = in.srv.Close()
		return nil, err
	}
	return in, nil
}

func (in *instance) env() []string {
	p := in.pool
	fn := p.fn
	env := append([]string{}, os.Environ()...)
	env = append(env, "AWS_REGION="+p.opts.region, "AWS_DEFAULT_REGION="+p.opts.region)
	for k, v := range fn.Env {
		env = append(env, k+"="+v)
	}
	// Reserved variables last: exec keeps the last duplicate.
	stream := fmt.Sprintf("%s/[$LATEST]%s", time.Now().UTC().Format("2006/01/02"), randHex(16))
	env = append(env,
		"AWS_LAMBDA_RUNTIME_API="+in.addr,
		consumer.EnvFaultHookURL+"=http://"+in.addr+"/harness/fault",
		"AWS_LAMBDA_FUNCTION_NAME="+fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(fn.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/"+fn.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME="+stream,
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"LAMBDA_TASK_ROOT="+filepath.Dir(fn.Binary),
		"_HANDLER=bootstrap",
	)
	if fn.Concurrency > 1 {
		env = append(env, EnvMaxConcurrency+"="+strconv.Itoa(fn.Concurrency))
	}
	return env
}

// spawnLocked starts a new process for the instance. restart says whether it
// replaces a dead one (for the Restarts counter).
func (in *instance) spawnLocked(restart bool) error {
	p := in.pool
	if in.stopping {
		return ErrStopped
	}
	cmd := exec.Command(p.fn.Binary)
	cmd.Env = in.env()
	cmd.Dir = filepath.Dir(p.fn.Binary)
	// Own process group so SIGKILL reaches anything the function forked.
	cmd.SysProcAttr = procAttr()
	// Lines are prefixed once the pid is known; the writers read it lazily.
	var pid atomic.Int64
	stdout := &lineWriter{pool: p, prefix: func() string { return fmt.Sprintf("[%s#%d pid=%d] ", p.fn.Name, in.id, pid.Load()) }}
	stderr := &lineWriter{pool: p, prefix: stdout.prefix}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Don't let a grandchild holding the pipes block Wait forever.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lambdarun: start %s: %w", p.fn.Binary, err)
	}
	pid.Store(int64(cmd.Process.Pid))
	proc := &process{cmd: cmd, pid: cmd.Process.Pid, began: time.Now(), exited: make(chan struct{}), ready: make(chan struct{}),
		active: map[string]*invocation{}}
	in.proc = proc
	if restart {
		p.restarts.Add(1)
	}
	p.logf("%s#%d started pid %d on %s", p.fn.Name, in.id, proc.pid, in.addr)
	go func() {
		_ = cmd.Wait()
		stdout.flush()
		stderr.flush()
		p.logf("%s#%d pid %d exited: %s", p.fn.Name, in.id, proc.pid, cmd.ProcessState)
		close(proc.exited)
		in.onExit(proc)
	}()
	return nil
}

// onExit restarts an instance whose process died while idle (for example
// after a panic, which aws-lambda-go reports and then exits on). While an
// Invoke is on the instance, it restarts instead, so exactly one party does.
func (in *instance) onExit(proc *process) {
	if time.Since(proc.began) < 500*time.Millisecond {
		time.Sleep(200 * time.Millisecond) // don't spin on a binary that dies at init
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping || in.inflight > 0 || in.proc != proc {
		return
	}
	if err := in.spawnLocked(true); err != nil {
		in.pool.logf("%s#%d restart failed: %v", in.pool.fn.Name, in.id, err)
	}
}

// finish releases an instance after an invocation, restarting its process if
// it died.
func (in *instance) finish() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.inflight--
	if in.stopping {
		return
	}
	if in.proc == nil || isClosed(in.proc.exited) {
		if err := in.spawnLocked(true); err != nil {
			in.pool.logf("%s#%d restart failed: %v", in.pool.fn.Name, in.id, err)
		}
	}
}

// abandon withdraws an invocation the runtime has not picked up yet; it
// reports whether that succeeded (false: it had already started).
func (in *instance) abandon(inv *invocation) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-inv.started:
		return false
	default:
	}
	inv.abandoned = true
	in.dropLocked(func(w *invocation) bool { return w == inv })
	return true
}

// dropLocked takes out of in.work the invocations drop says; the others
// stay, in their order. in.mu is held, so no Invoke puts meanwhile; a /next
// that took one already sees it abandoned.
func (in *instance) dropLocked(drop func(*invocation) bool) {
	var keep []*invocation
	for len(in.work) > 0 {
		if w := <-in.work; !drop(w) {
			keep = append(keep, w)
		}
	}
	for _, w := range keep {
		in.work <- w
	}
}

func (in *instance) run(ctx context.Context, inv *invocation) ([]byte, error) {
	p := in.pool
	in.mu.Lock()
	if in.stopping {
		in.mu.Unlock()
		return nil, ErrStopped
	}
	in.inflight++
	for n, m := int64(in.inflight), p.inFlight.Load(); n > m && !p.inFlight.CompareAndSwap(m, n); m = p.inFlight.Load() {
	}
	defer in.finish()
	// A process that died while idle may not have been replaced yet (the exit
	// watcher backs off); don't charge that crash to this invocation.
	if in.proc == nil || isClosed(in.proc.exited) {
		if err := in.spawnLocked(true); err != nil {
			in.mu.Unlock()
			return nil, fmt.Errorf("lambdarun: %s#%d: %w", p.fn.Name, in.id, err)
		}
	}
	// While busy, nobody else restarts the instance, so proc stays the one
	// that will take this invocation.
	proc := in.proc
	in.dropLocked(func(w *invocation) bool { return w.abandoned }) // defensive: never block on a leftover
	in.work <- inv
	in.mu.Unlock()

	initTimer := time.NewTimer(p.opts.initTimeout)
	defer initTimer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-inv.started:
		case <-proc.exited:
			if !in.abandon(inv) {
				break
			}
			// The process died before taking the invocation (typically
			// right after reporting a panic), so the function never saw it:
			// redirect it to a fresh process, as Lambda would. Bounded, for
			// binaries that die during init.
			if attempt >= 3 {
				return nil, in.crashErr(proc)
			}
			in.mu.Lock()
			// Another invocation of the instance may have started the
			// fresh process already.
			if in.proc == proc || in.proc == nil || isClosed(in.proc.exited) {
				if err := in.spawnLocked(true); err != nil {
					in.mu.Unlock()
					return nil, fmt.Errorf("lambdarun: %s#%d: %w", p.fn.Name, in.id, err)
				}
			}
			proc = in.proc
			inv.abandoned = false
			in.work <- inv
			in.mu.Unlock()
			continue
		case <-ctx.Done():
			if in.abandon(inv) {
				return nil, ctx.Err()
			}
		case <-initTimer.C:
			if in.abandon(inv) {
				killAndWait(proc)
				return nil, fmt.Errorf("lambdarun: %s#%d runtime not ready after %s: %w", p.fn.Name, in.id, p.opts.initTimeout, ErrTimeout)
			}
		case <-p.done:
			return nil, ErrStopped
		}
		break
	}

	if inv.faults.KillAfter > 0 {
		stop := in.killAfter(proc, inv)
		defer stop()
	}
	in.mu.Lock()
	deadline := inv.deadline
	in.mu.Unlock()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-inv.done:
		return r.out, r.err
	case <-proc.exited:
		// An answer posted just before exiting (e.g. a panic report) wins.
		select {
		case r := <-inv.done:
			return r.out, r.err
		default:
		}
		return nil, in.crashErr(proc)
	case <-timer.C:
		select {
		case r := <-inv.done:
			return r.out, r.err
		default:
		}
		in.mu.Lock()
		if proc.timedOut == "" {
			proc.timedOut = inv.id
		}
		in.mu.Unlock()
		killAndWait(proc)
		p.logf("%s#%d request %s timed out after %s", p.fn.Name, in.id, inv.id, p.fn.Timeout)
		return nil, fmt.Errorf("lambdarun: %s request %s: %w after %s", p.fn.Name, inv.id, ErrTimeout, p.fn.Timeout)
	case <-p.done:
		return nil, ErrStopped
	}
}

func (in *instance) crashErr(proc *process) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping {
		return ErrStopped
	}
	switch {
	case proc.faultPoint != "":
		return fmt.Errorf("lambdarun: %s#%d killed at fault point %q key %q: %w", in.pool.fn.Name, in.id, proc.faultPoint, proc.faultKey, ErrCrashed)
	case proc.initErr != nil:
		return fmt.Errorf("lambdarun: %s#%d init error %s: %s: %w", in.pool.fn.Name, in.id, proc.initErr.Type, proc.initErr.Message, ErrCrashed)
	case proc.timedOut != "":
		return fmt.Errorf("lambdarun: %s#%d killed: request %s of the same process timed out: %w", in.pool.fn.Name, in.id, proc.timedOut, ErrCrashed)
	}
	return fmt.Errorf("lambdarun: %s#%d %s: %w", in.pool.fn.Name, in.id, proc.cmd.ProcessState, ErrCrashed)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func kill(proc *process) {
	// Negative pid: the whole process group (Setpgid made pgid == pid).
	if err := syscall.Kill(-proc.pid, syscall.SIGKILL); err != nil {
		_ = proc.cmd.Process.Kill()
	}
}

// exitWait bounds the wait for a SIGKILLed process to be reaped: it is
// the kernel's business and quick, but a harness never waits unbounded.
const exitWait = 10 * time.Second

// killAndWait kills proc and waits for it to be reaped, for at most
// exitWait (then it says so in the pool's log, and goes on).
func killAndWait(proc *process) {
	kill(proc)
	select {
	case <-proc.exited:
	case <-time.After(exitWait):
		fmt.Fprintf(os.Stderr, "lambdarun: pid %d not reaped %s after SIGKILL\n", proc.pid, exitWait)
	}
}

func (in *instance) handleNext(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	proc := in.proc
	in.mu.Unlock()
	if proc == nil {
		http.Error(w, "no process", http.StatusGone)
		return
	}
	proc.readyMu.Do(func() { close(proc.ready) })
	for {
		var inv *invocation
		select {
		case inv = <-in.work:
		case <-r.Context().Done():
			return
		case <-proc.exited:
			return
		}
		in.mu.Lock()
		if inv.abandoned {
			in.mu.Unlock()
			continue
		}
		if in.proc != proc {
			// A long poll left over from a dead process: give the work back.
			select {
			case in.work <- inv:
			default:
			}
			in.mu.Unlock()
			return
		}
		inv.deadline = time.Now().Add(in.pool.fn.Timeout)
		proc.active[inv.id] = inv
		close(inv.started)
		in.mu.Unlock()

		h := w.Header()
		h.Set(hdrRequestID, inv.id)
		h.Set(hdrDeadline, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set(hdrFunctionARN, in.pool.arn)
		h.Set(hdrTraceID, newTraceID())
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
		return
	}
}

// complete hands the runtime's answer for request id to the waiting Invoke.
func (in *instance) complete(w http.ResponseWriter, id string, res result) {
	in.mu.Lock()
	var inv *invocation
	if in.proc != nil {
		inv = in.proc.active[id]
		delete(in.proc.active, id)
	}
	in.mu.Unlock()
	if inv == nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequestID", "unknown or completed request id "+id)
		return
	}
	inv.done <- res
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func (in *instance) handleResponse(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxResponse+1))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	// aws-lambda-go reports errors while streaming a response in trailers.
	if typ := r.Trailer.Get(hdrErrorType); typ != "" {
		fe := &FunctionError{Type: typ}
		if raw, err := base64.StdEncoding.DecodeString(r.Trailer.Get(hdrErrorBody)); err == nil {
			fe = parseFunctionError(raw, typ)
		}
		in.complete(w, r.PathValue("id"), result{err: fe})
		return
	}
	if len(body) > maxResponse {
		in.complete(w, r.PathValue("id"), result{err: &FunctionError{Type: "Function.ResponseSizeTooLarge", Message: "response payload exceeds 6291456 bytes"}})
		return
	}
	in.complete(w, r.PathValue("id"), result{out: body})
}

func (in *instance) handleError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxResponse))
	in.complete(w, r.PathValue("id"), result{err: parseFunctionError(body, r.Header.Get(hdrErrorType))})
}

func (in *instance) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxResponse))
	fe := parseFunctionError(body, r.Header.Get(hdrErrorType))
	in.mu.Lock()
	proc := in.proc
	if proc != nil {
		proc.initErr = fe
	}
	in.mu.Unlock()
	in.pool.logf("%s#%d init error: %s: %s", in.pool.fn.Name, in.id, fe.Type, fe.Message)
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
	// Lambda discards an environment whose init failed.
	if proc != nil {
		go func() {
			time.Sleep(50 * time.Millisecond) // let the runtime read the 202
			kill(proc)
		}()
	}
}

func (in *instance) handleFault(w http.ResponseWriter, r *http.Request) {
	p := in.pool
	point, key := r.URL.Query().Get("point"), r.URL.Query().Get("key")
	p.countFault(point, false)
	in.mu.Lock()
	var own func(point, key string) Action
	if inv := in.caller(r); inv != nil {
		own = inv.faults.Fault
	}
	in.mu.Unlock()
	act := Continue
	if own != nil {
		act = own(point, key)
	} else if f := p.fault.Load(); f != nil {
		act = (*f)(point, key)
	}
	if act == Freeze {
		in.freeze(w)
		return
	}
	if act != Kill {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	in.mu.Lock()
	proc := in.proc
	if proc != nil {
		proc.faultPoint, proc.faultKey = point, key
	}
	in.mu.Unlock()
	if proc == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p.countFault(point, true)
	p.logf("%s#%d fault point %q key %q: SIGKILL pid %d", p.fn.Name, in.id, point, key, proc.pid)
	kill(proc)
	// Never answer: the caller is dead. Return once that is certain.
	select {
	case <-proc.exited:
	case <-r.Context().Done():
	}
}

// caller is the invocation a fault call comes from: the one its request_id
// names (consumer sends it), else the only one in flight; nil when neither
// tells. in.mu is held.
func (in *instance) caller(r *http.Request) *invocation {
	if in.proc == nil {
		return nil
	}
	if id := r.URL.Query().Get(consumer.FaultHookRequestID); id != "" {
		return in.proc.active[id]
	}
	if len(in.proc.active) == 1 {
		for _, inv := range in.proc.active {
			return inv
		}
	}
	return nil
}

// freeze stops the calling process, then answers its fault call (it reads
// the answer once it runs again), and resumes it after the freeze duration.
// The stop comes first so that no byte of the answer can reach the process
// while it still runs.
func (in *instance) freeze(w http.ResponseWriter) {
	in.mu.Lock()
	proc := in.proc
	in.mu.Unlock()
	if proc != nil {
		d := time.Duration(in.pool.freeze.Load())
		if d <= 0 {
			d = time.Second
		}
		resume := func() { _ = syscall.Kill(-proc.pid, syscall.SIGCONT) }
		if err := syscall.Kill(-proc.pid, syscall.SIGSTOP); err != nil {
			in.pool.logf("%s#%d fault: SIGSTOP pid %d: %v", in.pool.fn.Name, in.id, proc.pid, err)
		} else if release := in.pool.release.Load(); release != nil {
			waitStopped(proc.pid)
			in.pool.logf("%s#%d fault: SIGSTOP pid %d until released", in.pool.fn.Name, in.id, proc.pid)
			go func() {
				select {
				case <-*release:
				case <-in.pool.done:
				case <-proc.exited:
				}
				resume()
			}()
		} else {
			waitStopped(proc.pid)
			in.pool.logf("%s#%d fault: SIGSTOP pid %d for %s", in.pool.fn.Name, in.id, proc.pid, d)
			time.AfterFunc(d, resume)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitStopped waits (up to a second) until every thread of pid shows the
// stopped state: kill returns before a busy multi-threaded process has
// actually stopped.
func waitStopped(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			// The state follows the parenthesised command name: "pid (comm) T ...".
			if i := bytes.LastIndexByte(b, ')'); err != nil || i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func parseFunctionError(body []byte, hdrType string) *FunctionError {
	var doc struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}
	fe := &FunctionError{Type: hdrType, Payload: body}
	if err := json.Unmarshal(body, &doc); err == nil {
		fe.Message = doc.Message
		if doc.Type != "" {
			fe.Type = doc.Type
		}
	} else {
		fe.Message = string(body)
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	return fe
}

func writeAPIError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}

// lineWriter prefixes each complete line of a process's output. Each pipe has
// its own lineWriter (exec copies each pipe from one goroutine), so buf needs
// no lock; the shared sink is guarded by pool.logMu.
type lineWriter struct {
	pool   *Pool
	prefix func() string
	buf    []byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

func (l *lineWriter) emit(line []byte) {
	l.pool.logMu.Lock()
	defer l.pool.logMu.Unlock()
	_, _ = io.WriteString(l.pool.opts.log, l.prefix())
	_, _ = l.pool.opts.log.Write(line)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newRequestID returns a random RFC 4122 version 4 UUID, the format of Lambda
// request ids.
func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randHex(12), randHex(8))
}
