"""A custom Lambda runtime in Python for the tests: the payload says what to do.

Payload {"op": ...}:
  echo     answer {"echo": payload, "requestId", "deadlineMs", "arn", "trace", "env", "cwd", "pid"}
           ("chunked": true sends the answer with Transfer-Encoding: chunked, in several chunks)
  log      print "log <n>" lines to stdout and stderr (the last one right before answering)
  error    post to /error with Lambda-Runtime-Function-Error-Type: {"type"}
  sleep    sleep {"seconds"} then answer
  exit     print "dying", exit with status 3
  child    start a child process (sleep 300) in the same process group, answer its pid
Init (env FAKE_INIT): "error" posts /init/error and exits 1; "exit" exits 2; "hang"
never polls; "log" prints "init says hi" first.
"""

import http.client
import json
import os
import subprocess
import sys
import time

API = os.environ["AWS_LAMBDA_RUNTIME_API"]
BASE = "/2018-06-01/runtime"
ENV_KEYS = [
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_RUNTIME_API",
    "LAMBDA_TASK_ROOT",
    "CUSTOM_VAR",
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "TMPDIR",
    "TZ",
    "HOME",
]


def conn():
    host, port = API.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=600)


def post(c, path, body: bytes, headers=None, chunked=False):
    headers = dict(headers or {})
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
        parts = [body[i : i + 7] for i in range(0, len(body), 7)] or [b""]
        c.request("POST", path, body=iter(parts), headers=headers, encode_chunked=True)
    else:
        c.request("POST", path, body=body, headers=headers)
    r = c.getresponse()
    r.read()
    return r.status


def main():
    c = conn()
    init = os.environ.get("FAKE_INIT", "")
    if init == "log":
        print("init says hi", flush=True)
    if init == "error":
        post(c, f"{BASE}/init/error", json.dumps({"errorMessage": "bad config", "errorType": "Init.Bad"}).encode(),
             {"Lambda-Runtime-Function-Error-Type": "Init.Bad"})
        sys.exit(1)
    if init == "exit":
        print("exiting during init", flush=True)
        sys.exit(2)
    if init == "hang":
        time.sleep(3600)
    while True:
        c.request("GET", f"{BASE}/invocation/next")
        r = c.getresponse()
        payload = r.read()
        if r.status != 200:
            sys.exit(0)
        rid = r.getheader("Lambda-Runtime-Aws-Request-Id")
        event = json.loads(payload or b"{}")
        op = event.get("op", "echo")
        answer = {
            "echo": event,
            "requestId": rid,
            "deadlineMs": int(r.getheader("Lambda-Runtime-Deadline-Ms")),
            "arn": r.getheader("Lambda-Runtime-Invoked-Function-Arn"),
            "trace": r.getheader("Lambda-Runtime-Trace-Id"),
            "env": {k: os.environ.get(k) for k in ENV_KEYS},
            "cwd": os.getcwd(),
            "pid": os.getpid(),
        }
        if op == "log":
            for i in range(int(event.get("n", 3))):
                print(f"log {i}", flush=True)
                print(f"log {i} on stderr", file=sys.stderr, flush=True)
        elif op == "error":
            post(c, f"{BASE}/invocation/{rid}/error",
                 json.dumps({"errorMessage": event.get("message", "boom"), "errorType": event.get("type", "MyError")}).encode(),
                 {"Lambda-Runtime-Function-Error-Type": event.get("type", "MyError")})
            continue
        elif op == "sleep":
            time.sleep(float(event.get("seconds", 1)))
        elif op == "exit":
            print("dying", flush=True)
            os._exit(3)
        elif op == "child":
            child = subprocess.Popen(["sleep", "300"])
            answer["child"] = child.pid
        status = post(c, f"{BASE}/invocation/{rid}/response", json.dumps(answer).encode(), chunked=bool(event.get("chunked")))
        if status != 202:
            print(f"response refused: {status}", flush=True)


if __name__ == "__main__":
    main()
