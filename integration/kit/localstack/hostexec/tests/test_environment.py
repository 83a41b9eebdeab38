"""HostEnvironment with a fake Python runtime (tests/fake_bootstrap.py)."""

import json
import os
import time

import pytest

from conftest import invoke
from hostexec.environment import StartupError


def body(result) -> dict:
    return json.loads(result.payload)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_echo_env_headers_and_cwd(make_env, code_dir, tmp_path):
    env = make_env()
    env.start()
    before = int(time.time() * 1000)
    r = invoke(env, {"op": "echo", "x": 1}, trace_id="Root=1-abc")
    assert not r.is_error, r.payload
    b = body(r)
    assert b["echo"] == {"op": "echo", "x": 1}
    assert b["requestId"] == "req-1"
    assert b["arn"].endswith(":function:fn")
    assert b["trace"] == "Root=1-abc"
    assert before + 9000 <= b["deadlineMs"] <= int(time.time() * 1000) + 10000
    assert b["cwd"] == str(code_dir)
    e = b["env"]
    assert e["AWS_LAMBDA_FUNCTION_NAME"] == "fn"
    assert e["CUSTOM_VAR"] == "custom"
    assert e["LAMBDA_TASK_ROOT"] == str(code_dir)
    assert e["AWS_LAMBDA_RUNTIME_API"].startswith("127.0.0.1:")
    assert e["TMPDIR"].startswith(str(tmp_path))
    assert e["TZ"] == ":UTC"
    assert e["HOME"] is None, "the host environment must not leak into the function"


def test_chunked_response_from_the_runtime(make_env):
    env = make_env()
    env.start()
    r = invoke(env, {"op": "echo", "chunked": True, "batchItemFailures": [{"itemIdentifier": "m-1"}]})
    assert not r.is_error
    assert body(r)["echo"]["batchItemFailures"] == [{"itemIdentifier": "m-1"}]


def test_process_is_reused_across_invocations(make_env):
    env = make_env()
    env.start()
    p1 = body(invoke(env, {}, "a"))["pid"]
    p2 = body(invoke(env, {}, "b"))["pid"]
    assert p1 == p2


def test_logs_per_invocation(make_env, tmp_path):
    env = make_env(env={"FAKE_INIT": "log"})
    env.start()
    r1 = invoke(env, {"op": "log", "n": 2}, "rid-1")
    lines = r1.logs.splitlines()
    assert lines[0].startswith("INIT_START")
    assert "init says hi" in lines
    start = lines.index("START RequestId: rid-1 Version: $LATEST")
    assert lines[start + 1 :][:4] == ["log 0", "log 0 on stderr", "log 1", "log 1 on stderr"] or sorted(
        lines[start + 1 : start + 5]
    ) == sorted(["log 0", "log 0 on stderr", "log 1", "log 1 on stderr"])
    # the last line, printed right before the response, is not lost
    assert "log 1 on stderr" in lines
    assert lines[-2] == "END RequestId: rid-1"
    assert lines[-1].startswith("REPORT RequestId: rid-1\tDuration: ")
    assert "Init Duration" in lines[-1]

    r2 = invoke(env, {"op": "log", "n": 1}, "rid-2")
    lines2 = r2.logs.splitlines()
    assert lines2[0] == "START RequestId: rid-2 Version: $LATEST"
    assert "log 1" not in lines2 and "log 0" in lines2
    assert "Init Duration" not in lines2[-1]

    text = (tmp_path / "fn.log").read_text()
    assert "[fn] log 0 on stderr" in text and "START RequestId: rid-2" in text and "REPORT RequestId: rid-1" in text
    assert "log 1 on stderr" in env.output()


def test_function_error(make_env):
    env = make_env()
    env.start()
    r = invoke(env, {"op": "error", "type": "Nope", "message": "bad input"})
    assert r.is_error and r.error_type == "Nope"
    assert body(r) == {"errorMessage": "bad input", "errorType": "Nope"}
    # the runtime keeps serving after a function error
    assert not invoke(env, {}, "again").is_error


def test_timeout_kills_and_next_invocation_reinitialises(make_env):
    env = make_env(timeout_s=1)
    env.start()
    pid = body(invoke(env, {}, "warm"))["pid"]
    t0 = time.monotonic()
    r = invoke(env, {"op": "sleep", "seconds": 30}, "slow")
    assert time.monotonic() - t0 < 5
    assert r.is_error and r.error_type == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in body(r)["errorMessage"]
    assert "slow Task timed out after 1.00 seconds" in r.logs
    assert not alive(pid)
    r2 = invoke(env, {}, "after")
    assert not r2.is_error, r2.payload
    assert body(r2)["pid"] != pid
    assert "INIT_START" in r2.logs


def test_crash_is_an_exit_error_and_next_invocation_reinitialises(make_env):
    env = make_env()
    env.start()
    r = invoke(env, {"op": "exit"}, "boom")
    assert r.is_error and r.error_type == "Runtime.ExitError"
    assert "Runtime exited with error: exit status 3" in body(r)["errorMessage"]
    assert "dying" in r.logs.splitlines()
    r2 = invoke(env, {}, "after")
    assert not r2.is_error


def test_init_error_fails_start(make_env):
    env = make_env(env={"FAKE_INIT": "error"})
    with pytest.raises(StartupError) as e:
        env.start()
    assert json.loads(e.value.payload)["errorType"] == "Init.Bad"


def test_exit_during_init_fails_start(make_env):
    env = make_env(env={"FAKE_INIT": "exit"})
    with pytest.raises(StartupError) as e:
        env.start()
    assert "exit status 2" in str(e.value)
    assert "exiting during init" in e.value.logs


def test_init_timeout(make_env):
    env = make_env(env={"FAKE_INIT": "hang"}, init_timeout_s=1)
    t0 = time.monotonic()
    with pytest.raises(StartupError) as e:
        env.start()
    assert time.monotonic() - t0 < 5
    assert json.loads(e.value.payload)["errorType"] == "Runtime.InitTimeout"


def test_exec_format_error(make_env, code_dir):
    boot = code_dir / "bootstrap"
    boot.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 100)  # an ELF the kernel cannot run
    boot.chmod(0o755)
    env = make_env()
    with pytest.raises(StartupError) as e:
        env.start()
    assert json.loads(e.value.payload)["errorType"] == "Runtime.InvalidEntrypoint"
    assert "format error" in str(e.value).lower()


def test_stop_kills_the_process_group(make_env, tmp_path):
    env = make_env()
    env.start()
    b = body(invoke(env, {"op": "child"}))
    pid, child = b["pid"], b["child"]
    assert alive(pid) and alive(child)
    assert (tmp_path / "state" / f"{pid}.pgid").exists()
    env.stop()
    deadline = time.monotonic() + 5
    while (alive(child) or alive(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid) and not alive(child)
    assert not (tmp_path / "state" / f"{pid}.pgid").exists()
    assert invoke(env, {}, "late").is_error


def test_stop_during_invocation_ends_it(make_env):
    import threading

    env = make_env(timeout_s=60)
    env.start()
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", invoke(env, {"op": "sleep", "seconds": 60})))
    t.start()
    time.sleep(0.5)
    env.stop()
    t.join(10)
    assert not t.is_alive()
    assert out["r"].is_error
