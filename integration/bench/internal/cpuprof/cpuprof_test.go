package cpuprof

import (
	"strings"
	"testing"
	"time"
)

const traces = `File: godriver
Build ID: 0123
Type: cpu
Time: 2026-11-23 11:07:04 UTC
Duration: 5.28s, Total samples = 100ms (2%)
-----------+-------------------------------------------------------
      40ms   runtime.futex
             runtime.futexsleep
             runtime.schedule
-----------+-------------------------------------------------------
      20ms   runtime.mallocgc
             github.com/exactlyonce/sqsidem/pkg/idem/dynamostore.(*Store).decode
             github.com/exactlyonce/sqsidem/pkg/idem.(*Guard).Do
-----------+-------------------------------------------------------
      10ms   reflect.Value.Field
             github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue.Unmarshal
             github.com/exactlyonce/sqsidem/pkg/idem/dynamostore.(*Store).decode
-----------+-------------------------------------------------------
      10ms   github.com/exactlyonce/sqsidem/pkg/idem/dynamostore.(*exprCache).get (inline)
             github.com/exactlyonce/sqsidem/pkg/idem/dynamostore.(*Store).acquire
-----------+-------------------------------------------------------
      10ms   internal/runtime/syscall/linux.Syscall6
             syscall.Syscall
             internal/poll.(*FD).Write
             net/http.(*persistConn).writeLoop
-----------+-------------------------------------------------------
      1.0ms  crypto/internal/fips140/sha256.blockSHANI
             github.com/aws/aws-sdk-go-v2/aws/signer/v4.(*httpSigner).Build
-----------+-------------------------------------------------------
      9ms    encoding/json.(*decodeState).object
             main.(*effects).effect
`

func TestParseAndClassify(t *testing.T) {
	samples, err := ParseTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 {
		t.Fatalf("%d samples, want 7", len(samples))
	}
	if got := samples[1].Stack; len(got) != 3 || got[0] != "runtime.mallocgc" {
		t.Fatalf("stack %q", got)
	}
	s := Classify(samples)
	if s.Total != 100*time.Millisecond {
		t.Errorf("total %v, want 100ms", s.Total)
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		cat          string
		self, caller time.Duration
	}{
		{Runtime, 60 * ms, 40 * ms}, // futex stays, mallocgc goes to its caller
		{Ours, 10 * ms, 40 * ms},    // exprCache.get; + mallocgc and the attributevalue decode it called
		{Other, 10 * ms, 0},         // reflect
		{NetHTTP, 10 * ms, 10 * ms}, // no non-std caller: stays
		{Crypto, 1 * ms, 0},
		{SDK, 0, 1 * ms},
		{JSON, 9 * ms, 0},
		{Driver, 0, 9 * ms},
	} {
		if s.Self[tc.cat] != tc.self || s.Caller[tc.cat] != tc.caller {
			t.Errorf("%s: self %v caller %v, want %v %v", tc.cat, s.Self[tc.cat], s.Caller[tc.cat], tc.self, tc.caller)
		}
	}
	if len(s.TopOurs) != 1 || s.TopOurs[0].Name != "github.com/exactlyonce/sqsidem/pkg/idem/dynamostore.(*exprCache).get" {
		t.Errorf("top ours %v", s.TopOurs)
	}
	if got := s.Share(10 * ms); got != 0.1 {
		t.Errorf("share %v", got)
	}
}

func TestCategory(t *testing.T) {
	for fn, want := range map[string]string{
		"github.com/exactlyonce/sqsidem/pkg/idem.fingerprint":                           Ours,
		"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch.(*Handler).Handle.func1":      Ours,
		"github.com/exactlyonce/sqsidem/integration/bench/internal/driver.Result.Setup": Driver,
		"main.runPool.func1": Driver,
		"github.com/aws/smithy-go/middleware.(*Stack).Add":                       SDK,
		"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue.Unmarshal": SDK,
		"net/http.(*Transport).roundTrip":                                        NetHTTP,
		"net.(*conn).Read":                                                       NetHTTP,
		"vendor/golang.org/x/net/http/httpguts.ValidHeaderFieldName":             NetHTTP,
		"crypto/hmac.(*hmac).Sum":                                                Crypto,
		"hash/crc32.ChecksumIEEE":                                                Crypto,
		"encoding/json.Unmarshal":                                                JSON,
		"runtime.mallocgc":                                                       Runtime,
		"internal/runtime/maps.(*Map).getWithKeySmallFastStr":                    Runtime,
		"gcWriteBarrier":                                                         Runtime,
		"type:.eq.[2]interface {}":                                               Runtime,
		"strconv.FormatInt":                                                      Other,
		"github.com/aws/aws-lambda-go/events.(*SQSMessage).UnmarshalJSON":        SDK,
		"github.com/google/uuid.New":                                             Other,
	} {
		if got := Category(fn); got != want {
			t.Errorf("Category(%q) = %q, want %q", fn, got, want)
		}
	}
}

func TestParseTracesEmpty(t *testing.T) {
	if _, err := ParseTraces(strings.NewReader("File: x\nType: cpu\n")); err == nil {
		t.Fatal("no error for a profile without samples")
	}
}
