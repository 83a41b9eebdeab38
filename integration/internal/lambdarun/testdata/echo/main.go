// Command echo is the test Lambda for package lambdarun. Its behaviour is
// chosen by the payload so one binary covers every runtime-API path.
package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// faultHookURL is consumer.EnvFaultHookURL, which the harness sets. This
// test function imports nothing of the repository, so that building it
// stays quick; the harness's tests fail if the two names part.
const faultHookURL = "FAULT_HOOK_URL"

// faultHookRequestID is consumer.FaultHookRequestID.
const faultHookRequestID = "request_id"

type request struct {
	Op    string `json:"op"`    // echo | sleep | error | deadline | fault | panic | exit | concurrency
	Value string `json:"value"` // echoed back / error message / fault key
	Sleep string `json:"sleep"` // duration for op=sleep
}

type response struct {
	Value      string `json:"value"`
	DeadlineMs int64  `json:"deadlineMs,omitempty"`
	RequestID  string `json:"requestId,omitempty"`
	PID        int    `json:"pid"`
	Function   string `json:"function,omitempty"`
	Env        string `json:"env,omitempty"`
}

func handle(ctx context.Context, req request) (response, error) {
	out := response{Value: req.Value, PID: os.Getpid(), Function: lambdacontext.FunctionName, Env: os.Getenv("ECHO_ENV")}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		out.RequestID = lc.AwsRequestID
	}
	switch req.Op {
	case "sleep":
		d, err := time.ParseDuration(req.Sleep)
		if err != nil {
			return out, err
		}
		// Deliberately ignores ctx: a misbehaving handler that the harness must kill.
		time.Sleep(d)
	case "error":
		return out, errors.New(req.Value)
	case "deadline":
		if dl, ok := ctx.Deadline(); ok {
			out.DeadlineMs = dl.UnixMilli()
		}
	case "fault":
		u := os.Getenv(faultHookURL) + "?point=" + url.QueryEscape("before-commit") + "&key=" + url.QueryEscape(req.Value) +
			"&" + faultHookRequestID + "=" + url.QueryEscape(out.RequestID)
		resp, err := http.Post(u, "text/plain", nil)
		if err != nil {
			return out, err
		}
		resp.Body.Close()
	case "concurrency":
		out.Value = os.Getenv("AWS_LAMBDA_MAX_CONCURRENCY")
	case "panic":
		panic(req.Value)
	case "exit":
		os.Exit(3)
	}
	return out, nil
}

func main() {
	lambda.Start(handle)
}
