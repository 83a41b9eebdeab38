package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/exactlyonce/sqsidem/integration/internal/chaos"
	"github.com/exactlyonce/sqsidem/integration/internal/emu"
)

// emulators starts DynamoDB Local and ElasticMQ, unless AWS_ENDPOINT_URL
// names an endpoint (LocalStack); pids names the processes started.
func emulators(ctx context.Context, root string) (dynamoURL, sqsURL string, pids map[string]int, stop func(), err error) {
	if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
		return url, url, nil, func() {}, nil
	}
	var ddb, mq *emu.Server
	stop = func() {
		if ddb != nil {
			_ = ddb.Stop()
		}
		if mq != nil {
			_ = mq.Stop()
		}
	}
	var ddbErr, mqErr error
	var wg sync.WaitGroup
	wg.Go(func() { ddb, ddbErr = emu.StartDynamoDB(ctx, root) })
	wg.Go(func() { mq, mqErr = emu.StartSQS(ctx, root) })
	wg.Wait()
	if err := errors.Join(ddbErr, mqErr); err != nil {
		stop()
		return "", "", nil, nil, err
	}
	pids = map[string]int{"DynamoDB Local (JVM)": ddb.Pid(), "ElasticMQ (JVM)": mq.Pid()}
	return ddb.URL(), mq.URL(), pids, stop, nil
}

func count(r *chaos.Result, kind string) int {
	n := 0
	for _, e := range r.Events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GB", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%d cores%s, %s/%s", runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
