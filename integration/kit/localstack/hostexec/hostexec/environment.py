"""One execution environment: a bootstrap process on this host and its Runtime API.

:class:`HostEnvironment` does what LocalStack's init binary does inside a Lambda
container, without a container and without LocalStack:

- starts ``bootstrap`` in its own process group (cwd = the code folder, a clean
  environment: the function's variables plus ``AWS_LAMBDA_RUNTIME_API``,
  ``LAMBDA_TASK_ROOT``, ``TMPDIR``, ``PATH``), and waits until it polls
  ``/next`` (init done), posts ``/init/error`` or exits;
- runs one invocation at a time with a deadline: on timeout the process group
  is killed (``Sandbox.Timedout``), a crash ends the invocation
  (``Runtime.ExitError``); the next invocation starts a new process (re-init);
- collects the process's stdout/stderr per invocation, wrapped in AWS's
  ``START``/``END``/``REPORT`` lines (what LocalStack stores in CloudWatch
  Logs), appends every line to a log file, keeps the whole output for
  ``get_logs``;
- kills the process group when stopped.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

from hostexec.runtime_api import Invocation, RuntimeAPIServer, error_body

LOG = logging.getLogger(__name__)

_MAX_OUTPUT_CHARS = 1_000_000  # kept for get_logs()
_MAX_IDLE_LINES = 10_000  # lines printed outside an invocation, kept for the next one
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class StartupError(Exception):
    """The runtime did not initialise. ``payload`` is the Lambda error JSON."""

    def __init__(self, message: str, payload: bytes, logs: str = "") -> None:
        super().__init__(message)
        self.payload = payload
        self.logs = logs


@dataclasses.dataclass
class InvokeResult:
    request_id: str
    payload: bytes
    is_error: bool
    logs: str
    error_type: str | None = None


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _LogPump:
    """Reads a pipe line by line; ``drain()`` collects what is already in it.

    A runtime writes its log lines before it posts its response, so once the
    response has arrived those lines are in the pipe: ``drain()`` reads the
    pipe (non-blocking, under the lock the background reader also takes)
    until it is empty, and the lines land in the right invocation.
    """

    def __init__(self, pipe, sink) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        self._sink = sink
        self._lock = threading.Lock()
        self._partial = b""
        self.eof = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostexec-log-pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self.eof.is_set():
            try:
                readable, _, _ = select.select([self._fd], [], [], 0.2)
            except (OSError, ValueError):
                break
            if readable:
                self.drain()
        self.flush_partial()

    def _read_available(self) -> None:
        while not self.eof.is_set():
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.eof.set()
                return
            data = self._partial + chunk
            *lines, self._partial = data.split(b"\n")
            for line in lines:
                self._sink(line.decode("utf-8", "replace").rstrip("\r"))

    def drain(self) -> None:
        with self._lock:
            self._read_available()

    def flush_partial(self) -> None:
        with self._lock:
            if self._partial:
                line, self._partial = self._partial, b""
                self._sink(line.decode("utf-8", "replace").rstrip("\r"))

    def close(self) -> None:
        self.drain()
        self.flush_partial()
        self.eof.set()
        self._thread.join(timeout=2)
        try:
            self._pipe.close()
        except OSError:
            pass


class _Process:
    """One generation of the bootstrap: process, Runtime API server, log pump."""

    def __init__(self, popen: subprocess.Popen, server: RuntimeAPIServer, pump: _LogPump) -> None:
        self.popen = popen
        self.server = server
        self.pump = pump
        self.exited = threading.Event()
        self.current: Invocation | None = None
        self.killed_for: str | None = None  # why we killed it, if we did
        self.reaped = False  # _kill has run: its process group is gone

    @property
    def pid(self) -> int:
        return self.popen.pid


class HostEnvironment:
    def __init__(
        self,
        *,
        code_dir: str | os.PathLike,
        env: dict[str, str],
        function_name: str,
        timeout_s: float,
        memory_mb: int = 128,
        version: str = "$LATEST",
        runtime_name: str = "provided",
        init_timeout_s: float = 30.0,
        work_dir: str | os.PathLike,
        log_file: str | os.PathLike | None = None,
        state_dir: str | os.PathLike | None = None,
        label: str = "",
        command: list[str] | None = None,
    ) -> None:
        self.code_dir = Path(code_dir)
        self.function_name = function_name
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.version = version
        self.runtime_name = runtime_name
        self.init_timeout_s = init_timeout_s
        self.work_dir = Path(work_dir)
        self.log_file = Path(log_file) if log_file else None
        self.state_dir = Path(state_dir) if state_dir else None
        self.label = label or function_name
        self.command = command or [str(self.code_dir / "bootstrap")]
        self._env = {k: str(v) for k, v in env.items() if v is not None}

        self._lock = threading.Lock()  # guards the log targets below
        self._invoke_lock = threading.Lock()  # one invocation at a time
        self._capture: list[str] | None = None  # lines of the running invocation
        self._idle: deque[str] = deque(maxlen=_MAX_IDLE_LINES)  # lines outside one
        self._output: deque[str] = deque()
        self._output_chars = 0
        self._file_lock = threading.Lock()
        self._proc: _Process | None = None
        self._stopped = threading.Event()
        self._init_ms: float | None = None  # reported on the first REPORT after an init

    # --- logs --------------------------------------------------------------------

    def _on_line(self, line: str) -> None:
        with self._lock:
            if self._capture is not None:
                self._capture.append(line)
            else:
                self._idle.append(line)
            self._output.append(line)
            self._output_chars += len(line) + 1
            while self._output_chars > _MAX_OUTPUT_CHARS and self._output:
                self._output_chars -= len(self._output.popleft()) + 1
        self._write_file(line)

    def _write_file(self, *lines: str) -> None:
        if not self.log_file:
            return
        stamp = _now_iso()
        text = "".join(f"{stamp} [{self.label}] {line}\n" for line in lines)
        try:
            with self._file_lock, open(self.log_file, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            LOG.debug("hostexec: cannot append to %s: %s", self.log_file, e)

    def _emit(self, line: str) -> None:
        """A line of ours (INIT_START, START, END, REPORT, errors), routed like the process's."""
        self._on_line(line)

    def output(self) -> str:
        with self._lock:
            return "\n".join(self._output)

    # --- process -----------------------------------------------------------------

    def _process_env(self, runtime_api: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", _DEFAULT_PATH),
            "LANG": "C.UTF-8",
            "TZ": ":UTC",
        }
        env.update(self._env)
        tmp = self.work_dir / "tmp"
        env.update(
            {
                "AWS_LAMBDA_RUNTIME_API": runtime_api,
                "LAMBDA_TASK_ROOT": str(self.code_dir),
                "TMPDIR": str(tmp),
            }
        )
        return env

    def _spawn(self) -> _Process:
        (self.work_dir / "tmp").mkdir(parents=True, exist_ok=True)
        server = RuntimeAPIServer().start()
        try:
            popen = subprocess.Popen(
                self.command,
                cwd=self.code_dir,
                env=self._process_env(server.address),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as a whole
                close_fds=True,
            )
        except OSError as e:
            server.close()
            message = f"RequestId: - Error: fork/exec {self.command[0]}: {e.strerror or e}"
            self._emit(message)
            raise StartupError(
                f"cannot start {self.command[0]}: {e}", error_body("Runtime.InvalidEntrypoint", message)
            ) from e
        pump = _LogPump(popen.stdout, self._on_line)
        proc = _Process(popen, server, pump)
        self._register(proc)

        def watch() -> None:
            popen.wait()
            proc.exited.set()
            inv = proc.current
            if inv is not None and not inv.done.is_set():
                reason = proc.killed_for or f"Runtime exited with error: {_exit_text(popen.returncode)}"
                inv.complete(
                    error_body("Runtime.ExitError", f"RequestId: {inv.request_id} Error: {reason}"),
                    True,
                    "Runtime.ExitError",
                )

        threading.Thread(target=watch, name=f"hostexec-watch-{popen.pid}", daemon=True).start()
        return proc

    def _register(self, proc: _Process) -> None:
        if self.state_dir:
            try:
                self.state_dir.mkdir(parents=True, exist_ok=True)
                (self.state_dir / f"{proc.pid}.pgid").write_text(f"{proc.pid}\n")
            except OSError as e:
                LOG.debug("hostexec: cannot write pgid file: %s", e)

    def _unregister(self, proc: _Process) -> None:
        if self.state_dir:
            try:
                (self.state_dir / f"{proc.pid}.pgid").unlink()
            except OSError:
                pass

    def _kill(self, proc: _Process, why: str | None = None) -> None:
        if why and proc.killed_for is None:
            proc.killed_for = why
        if proc.reaped:
            return
        proc.reaped = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the bootstrap and its children
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            LOG.warning("hostexec: process %s did not die after SIGKILL", proc.pid)
        proc.exited.wait(timeout=2)
        proc.server.close()
        proc.pump.close()
        self._unregister(proc)

    def _init(self, timeout_s: float) -> None:
        """Starts a process and waits for its first /next. Raises StartupError."""
        t0 = time.monotonic()
        proc = self._spawn()
        self._proc = proc
        deadline = t0 + timeout_s
        while True:
            if proc.server.ready.is_set():
                self._init_ms = (time.monotonic() - t0) * 1000
                return
            failure: tuple[str, bytes] | None = None
            if proc.server.init_error_event.is_set():
                etype, body = proc.server.init_error or (None, b"")
                failure = ("the runtime reported an init error", body or error_body(etype or "Runtime.Unknown", "init error"))
            elif proc.exited.is_set():
                text = f"Runtime exited with error: {_exit_text(proc.popen.returncode)}"
                failure = (text, error_body("Runtime.ExitError", f"RequestId: - Error: {text}"))
            elif self._stopped.is_set():
                failure = ("the environment was stopped during init", error_body("Runtime.Unknown", "environment stopped during init"))
            elif time.monotonic() >= deadline:
                text = f"init did not finish within {timeout_s:.0f} s (the runtime never polled /next)"
                failure = (text, error_body("Runtime.InitTimeout", text))
            if failure:
                self._kill(proc)
                self._proc = None
                with self._lock:
                    logs = "\n".join(self._idle)
                self._emit(f"INIT_REPORT Init Duration: {(time.monotonic() - t0) * 1000:.2f} ms Phase: init Status: error Error: {failure[0]}")
                raise StartupError(f"{self.label}: {failure[0]}", failure[1], logs)
            proc.server.ready.wait(0.02)

    def start(self) -> None:
        """Starts the bootstrap and returns once it polls for its first invocation."""
        self._emit(f"INIT_START Runtime Version: {self.runtime_name} (hostexec) Function: {self.function_name}")
        self._init(self.init_timeout_s)

    # --- invoke ------------------------------------------------------------------

    def invoke(
        self,
        request_id: str,
        payload: bytes,
        function_arn: str,
        trace_id: str | None = None,
        client_context: str | None = None,
        cognito_identity: str | None = None,
    ) -> InvokeResult:
        with self._invoke_lock:
            return self._invoke(request_id, payload, function_arn, trace_id, client_context, cognito_identity)

    def _invoke(self, request_id, payload, function_arn, trace_id, client_context, cognito_identity) -> InvokeResult:
        t0 = time.monotonic()
        lines: list[str] = []
        proc = self._proc
        if proc is not None:
            proc.pump.drain()  # earlier output goes to the idle buffer, not to this invocation
        with self._lock:
            lines.extend(self._idle)
            self._idle.clear()
            self._capture = lines

        try:
            if self._stopped.is_set():
                return self._failed(request_id, lines, "Runtime.Unknown", "the execution environment was stopped", t0)
            if proc is None or proc.exited.is_set():
                # A crash or a timeout killed the previous process: init again inside this invocation.
                if proc is not None:
                    self._kill(proc)
                self._emit(f"INIT_START Runtime Version: {self.runtime_name} (hostexec) Function: {self.function_name}")
                try:
                    self._init(max(1.0, min(self.init_timeout_s, self.timeout_s)))
                except StartupError as e:
                    return self._finish(request_id, lines, e.payload, True, "Runtime.InitError", t0)
                proc = self._proc

            deadline_ms = int(time.time() * 1000 + self.timeout_s * 1000)
            inv = Invocation(request_id, payload, function_arn, deadline_ms, trace_id, client_context, cognito_identity)
            self._emit(f"START RequestId: {request_id} Version: {self.version}")
            proc.current = inv
            proc.server.submit(inv)
            if proc.exited.is_set() and not inv.done.is_set():
                inv.complete(
                    error_body("Runtime.ExitError", f"RequestId: {request_id} Error: Runtime exited with error: {_exit_text(proc.popen.returncode)}"),
                    True,
                    "Runtime.ExitError",
                )
            if not inv.done.wait(self.timeout_s):
                text = f"Task timed out after {self.timeout_s:.2f} seconds"
                if inv.complete(error_body("Sandbox.Timedout", f"RequestId: {request_id} Error: {text}"), True, "Sandbox.Timedout"):
                    proc.server.forget(inv)
                    self._kill(proc, why=text)
                    self._proc = None
                    proc.pump.drain()
                    self._emit(f"{_now_iso()} {request_id} {text}")
            proc.current = None
            if proc.exited.is_set() and self._proc is proc:
                # crashed: collect its last words, and init a new process next time
                self._kill(proc)
                self._proc = None
            proc.pump.drain()
            if inv.error_type == "Runtime.ExitError":
                self._emit(json.loads(inv.body).get("errorMessage", "Runtime exited"))
                self._emit("Runtime.ExitError")
            return self._finish(request_id, lines, inv.body, inv.is_error, inv.error_type, t0, pid=proc.pid)
        finally:
            with self._lock:
                self._capture = None

    def _failed(self, request_id: str, lines: list[str], error_type: str, message: str, t0: float) -> InvokeResult:
        return self._finish(request_id, lines, error_body(error_type, message), True, error_type, t0)

    def _finish(self, request_id, lines, body, is_error, error_type, t0, pid: int | None = None) -> InvokeResult:
        duration = (time.monotonic() - t0) * 1000
        self._emit(f"END RequestId: {request_id}")
        report = (
            f"REPORT RequestId: {request_id}\tDuration: {duration:.2f} ms\tBilled Duration: {math.ceil(duration)} ms\t"
            f"Memory Size: {self.memory_mb} MB\tMax Memory Used: {_max_rss_mb(pid)} MB\t"
        )
        if self._init_ms is not None:
            report += f"Init Duration: {self._init_ms:.2f} ms\t"
            self._init_ms = None
        if error_type in ("Sandbox.Timedout", "Runtime.ExitError", "Runtime.InitError"):
            report += f"Status: {'timeout' if error_type == 'Sandbox.Timedout' else 'error'}\t"
        self._emit(report)
        with self._lock:
            self._capture = None
        return InvokeResult(request_id, body, is_error, "\n".join(lines) + "\n", error_type)

    # --- stop --------------------------------------------------------------------

    def stop(self) -> None:
        """Kills the process group and closes the Runtime API. Idempotent."""
        self._stopped.set()
        proc, self._proc = self._proc, None
        if proc is not None:
            inv = proc.current
            if inv is not None:
                inv.complete(error_body("Runtime.Unknown", "the execution environment was stopped"), True, "Runtime.Unknown")
            self._kill(proc, why="the execution environment was stopped")
        shutil.rmtree(self.work_dir, ignore_errors=True)


def _exit_text(returncode: int | None) -> str:
    if returncode is None:
        return "unknown"
    if returncode < 0:
        try:
            return f"signal: {signal.Signals(-returncode).name.removeprefix('SIG').lower()}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _max_rss_mb(pid: int | None) -> int:
    if not pid:
        return 0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return max(1, int(line.split()[1]) // 1024)
    except (OSError, ValueError, IndexError):
        pass
    return 0
