"""The real thing: an aws-lambda-go function (integration/internal/lambdarun/testdata/echo).

aws-lambda-go streams its response with Transfer-Encoding: chunked; this is
the test that a Go function's answer arrives whole. Skipped without a Go
toolchain.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import invoke

REPO = Path(__file__).resolve().parents[5]
ECHO = REPO / "integration" / "internal" / "lambdarun" / "testdata" / "echo"


@pytest.fixture(scope="module")
def go_echo(tmp_path_factory) -> Path:
    if not shutil.which("go") or not ECHO.is_dir():
        pytest.skip("no go toolchain or echo sources")
    out = tmp_path_factory.mktemp("go-echo")
    cmd = ["go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", str(out / "bootstrap"), "./integration/internal/lambdarun/testdata/echo"]
    env = dict(os.environ, CGO_ENABLED="0")
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"go build failed: {r.stderr[-2000:]}"
    return out


def test_go_echo_round_trips(make_env, go_echo):
    env = make_env(code_dir=go_echo, env={"AWS_LAMBDA_FUNCTION_NAME": "echo-fn", "ECHO_ENV": "from-env"})
    env.start()
    r = invoke(env, {"op": "echo", "value": "hello"}, "go-1")
    assert not r.is_error, r.payload
    b = json.loads(r.payload)
    assert b["value"] == "hello"
    assert b["requestId"] == "go-1"
    assert b["function"] == "echo-fn"
    assert b["env"] == "from-env"

    big = "x" * 200_000  # several chunks
    r = invoke(env, {"op": "echo", "value": big}, "go-2")
    assert json.loads(r.payload)["value"] == big

    r = invoke(env, {"op": "deadline"}, "go-3")
    assert json.loads(r.payload)["deadlineMs"] > 0


def test_go_error_and_exit(make_env, go_echo):
    env = make_env(code_dir=go_echo)
    env.start()
    r = invoke(env, {"op": "error", "value": "kaput"}, "e-1")
    assert r.is_error
    assert json.loads(r.payload)["errorMessage"] == "kaput"
    r = invoke(env, {"op": "exit"}, "e-2")
    assert r.is_error and r.error_type == "Runtime.ExitError"
    r = invoke(env, {"op": "echo", "value": "back"}, "e-3")
    assert json.loads(r.payload)["value"] == "back"


def test_go_timeout(make_env, go_echo):
    env = make_env(code_dir=go_echo, timeout_s=1)
    env.start()
    r = invoke(env, {"op": "sleep", "sleep": "20s"}, "t-1")
    assert r.is_error and r.error_type == "Sandbox.Timedout"
    r = invoke(env, {"op": "echo", "value": "alive"}, "t-2")
    assert json.loads(r.payload)["value"] == "alive"
