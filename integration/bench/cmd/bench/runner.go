package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/sqsidem/integration/bench/internal/cost"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/driver"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/modelddb"
	"github.com/exactlyonce/sqsidem/integration/bench/internal/report"
	"github.com/exactlyonce/sqsidem/integration/internal/faultproxy"
)

// runTimeout bounds one driver run: a hung child must not hang the bench.
const runTimeout = 5 * time.Minute

// runner runs driver children against the one DynamoDB Local, through the
// counting proxy.
type runner struct {
	cfg     config
	proxy   *faultproxy.Proxy
	model   *modelddb.Server // the modelled-latency cases' store
	admin   *dynamodb.Client // straight to DynamoDB Local: tables are not counted
	drivers map[string][]string
	logDir  string
	seq     int
	// redisURL is set when a redis-server runs for the redisstore cases.
	redisURL string
	// results keeps every driver's JSON, for results.json.
	results []rawResult
}

// rawResult is one run as it goes into results.json.
type rawResult struct {
	Case   string         `json:"case"`
	Repeat int            `json:"repeat"`
	Result driver.Result  `json:"result"`
	Wire   map[string]int `json:"wire_requests,omitempty"`
	// Conns is the connections the driver opened to the modelled-latency
	// store over the whole run, warm-up included: its workers' count when
	// the pool keeps every connection.
	Conns int `json:"connections_opened,omitempty"`
}

// runJob runs one case for one system on a fresh table and turns the
// driver's JSON and the proxy's count into a sample.
func (r *runner) runJob(ctx context.Context, j job, system string, repeat int) report.Sample {
	r.seq++
	s := report.Sample{System: system, Case: j.c, Repeat: repeat}
	args := slices.Clone(j.args)
	if system == report.Floor {
		args = append(args, "--floor")
	}
	table := fmt.Sprintf("bench-%03d-%s", r.seq, strings.TrimPrefix(system, "powertools-"))
	counts := r.proxy.Counts
	switch {
	case system == report.Redis:
		args = append([]string{"--endpoint", r.redisURL, "--table", fmt.Sprintf("bench%d", r.seq)}, args...)
	case j.delay == model:
		if err := r.model.CreateTable(table, "id"); err != nil {
			s.Failure = err.Error()
			return s
		}
		args = append([]string{"--endpoint", r.model.URL(), "--table", table}, args...)
		r.model.Reset()
		counts = r.model.Counts
	default:
		if err := r.createTable(ctx, table); err != nil {
			s.Failure = err.Error()
			return s
		}
		defer r.deleteTable(table)
		args = append([]string{"--endpoint", r.proxy.URL(), "--table", table}, args...)
	}
	if j.delay == local {
		r.proxy.SetDecider(faultproxy.Mix{Delay: r.cfg.delay}.Decider())
		defer r.proxy.SetDecider(nil)
	}
	r.proxy.Reset()
	res, err := r.exec(ctx, system, j.scenario, args, j.env, fmt.Sprintf("%03d-%s-%s", r.seq, system, strings.NewReplacer(" ", "_", "=", "").Replace(j.c)))
	var wire map[string]int
	if system != report.Redis {
		wire = counts()
	}
	raw := rawResult{Case: j.c, Repeat: repeat, Result: res, Wire: wire}
	if j.delay == model {
		raw.Conns = r.model.Conns()
	}
	r.results = append(r.results, raw)
	if err != nil {
		s.Failure = err.Error()
		return s
	}
	s.Metrics, err = metrics(res, wire, system != report.Redis)
	if err != nil {
		s.Failure = err.Error()
		return s
	}
	if j.sizes && j.delay == none && system != report.Redis {
		receipt, ledger, err := r.itemSizes(ctx, table)
		if err != nil {
			s.Failure = err.Error()
			return s
		}
		s.Metrics[report.ItemBytes] = receipt
		if ledger > 0 {
			s.Metrics[report.LedgerBytes] = ledger
		}
	}
	return s
}

// itemSizes are the mean sizes, by DynamoDB's rules (cost.ItemSize), of the
// receipts and of the ledger items (ids ledger#...) a run left in table,
// read straight from DynamoDB Local (not through the proxy, not counted).
func (r *runner) itemSizes(ctx context.Context, table string) (receipt, ledger float64, err error) {
	var nr, nl, sr, sl int
	p := dynamodb.NewScanPaginator(r.admin, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, it := range page.Items {
			id, _ := it["id"].(*types.AttributeValueMemberS)
			if id != nil && strings.HasPrefix(id.Value, "ledger#") {
				nl, sl = nl+1, sl+cost.ItemSize(it)
				continue
			}
			nr, sr = nr+1, sr+cost.ItemSize(it)
		}
	}
	if nr == 0 {
		return 0, 0, fmt.Errorf("scan %s: no receipts", table)
	}
	receipt = float64(sr) / float64(nr)
	if nl > 0 {
		ledger = float64(sl) / float64(nl)
	}
	return receipt, ledger, nil
}

// metrics turns a driver's result into the sample's metrics. The requests
// per message are the proxy's: every request of the run, less those the
// driver made outside its loop (warm-up, seeding). A run whose wire count
// differs from the driver's own count fails.
func metrics(res driver.Result, wire map[string]int, onWire bool) (map[string]float64, error) {
	if !res.OK {
		return nil, fmt.Errorf("driver check failed: %s", res.Failure)
	}
	if res.Messages <= 0 {
		return nil, errors.New("driver reported no messages")
	}
	m := map[string]float64{
		report.DriverRPM: res.RequestsPerMessage,
		report.MsgsPerS:  res.MsgsPerSecond,
		report.CPUus:     1e6 * res.CPUSecondsPerMessage,
		report.MsPerMsg:  1e3 * res.Seconds / float64(res.Messages),
		report.RSSMB:     float64(res.RSSKB) / 1024,
		report.PeakMB:    float64(res.RSSPeakKB) / 1024,
	}
	if res.PerEventSeconds > 0 {
		m[report.MsPerEvt] = 1e3 * res.PerEventSeconds
	}
	for op, n := range res.Requests {
		m[report.OpRPM(op)] = float64(n) / float64(res.Messages)
	}
	if !onWire {
		m[report.WireRPM] = res.RequestsPerMessage // round trips, counted by the driver
		return m, nil
	}
	if !maps.Equal(wire, res.RequestsTotal) && !(len(wire) == 0 && len(res.RequestsTotal) == 0) {
		return nil, fmt.Errorf("the proxy saw %v, the driver says it sent %v", wire, res.RequestsTotal)
	}
	loop := sum(wire) - sum(res.Setup())
	m[report.WireRPM] = float64(loop) / float64(res.Messages)
	return m, nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// exec runs a driver and reads its JSON line. Its stderr goes to a log file.
func (r *runner) exec(ctx context.Context, system, scenario string, args, env []string, name string) (driver.Result, error) {
	argv := append(slices.Clone(r.drivers[system]), scenario)
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	logPath := filepath.Join(r.logDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return driver.Result{}, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ %s %s\n", strings.Join(env, " "), strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, logf
	cmd.Env = append(childEnv(), env...)
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	var res driver.Result
	line := lastLine(stdout.Bytes())
	if jerr := json.Unmarshal(line, &res); jerr != nil {
		if err == nil {
			err = fmt.Errorf("no JSON on stdout: %w", jerr)
		}
		return res, fmt.Errorf("%s %s: %w (log %s)", system, scenario, err, logPath)
	}
	fmt.Fprintf(logf, "%s\n", line)
	if err != nil && res.OK {
		return res, fmt.Errorf("%s %s: %w (log %s)", system, scenario, err, logPath)
	}
	return res, nil
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// childEnv is the orchestrator's environment without AWS settings: the
// drivers use dummy credentials and the endpoint they are given, whatever
// the caller has configured.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// createTable makes a receipt table as every driver expects it: partition
// key id (S), on demand. The orchestrator makes it, so that the proxy only
// sees the drivers' own requests.
func (r *runner) createTable(ctx context.Context, table string) error {
	_, err := r.admin.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(r.admin, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	return w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, time.Minute)
}

// deleteTable drops a run's table, so that DynamoDB Local does not grow
// over the run. Best effort.
func (r *runner) deleteTable(table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = r.admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
}
