"""The Lambda Runtime API (``/2018-06-01/runtime/...``) for one bootstrap process.

A bootstrap (aws-lambda-go, or any custom runtime) long-polls
``GET /2018-06-01/runtime/invocation/next``, then posts the result to
``.../invocation/<request id>/response`` or ``.../error``; a runtime that cannot
initialise posts ``/2018-06-01/runtime/init/error``. This module serves those
endpoints on 127.0.0.1 and hands invocations in and results out through
:class:`Invocation` objects. It has no LocalStack dependency.

Request bodies are read with Content-Length or ``Transfer-Encoding: chunked``:
aws-lambda-go streams its responses chunked, and a server that ignores that
sees an empty body (and would silently lose an SQS ``batchItemFailures``).

One server serves one process: when the process dies, its server is closed and
a new process gets a new server, so a stale ``/next`` long-poll of a dead
process can never take an invocation meant for its successor.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = logging.getLogger(__name__)

PREFIX = "/2018-06-01/runtime"
# AWS's limit for a synchronous response payload (6 MB as Lambda counts it).
MAX_RESPONSE_BYTES = 6291556
# Bodies larger than this are refused outright (the connection is closed).
_MAX_BODY_BYTES = 64 * 1024 * 1024


class Invocation:
    """One invocation: its inputs, and its result once the runtime has answered."""

    def __init__(
        self,
        request_id: str,
        payload: bytes,
        function_arn: str,
        deadline_ms: int,
        trace_id: str | None = None,
        client_context: str | None = None,
        cognito_identity: str | None = None,
    ) -> None:
        self.request_id = request_id
        self.payload = payload
        self.function_arn = function_arn
        self.deadline_ms = deadline_ms
        self.trace_id = trace_id
        self.client_context = client_context
        self.cognito_identity = cognito_identity
        self.done = threading.Event()
        self.is_error = False
        self.body = b""
        self.error_type: str | None = None
        self.delivered = threading.Event()  # the runtime has fetched it with /next
        self._lock = threading.Lock()

    def complete(self, body: bytes, is_error: bool, error_type: str | None = None) -> bool:
        """Records the result. The first completion wins; returns whether this one did."""
        with self._lock:
            if self.done.is_set():
                return False
            self.body = body
            self.is_error = is_error
            self.error_type = error_type
            self.done.set()
            return True

    def headers(self) -> dict[str, str]:
        h = {
            "Lambda-Runtime-Aws-Request-Id": self.request_id,
            "Lambda-Runtime-Deadline-Ms": str(self.deadline_ms),
            "Lambda-Runtime-Invoked-Function-Arn": self.function_arn,
        }
        if self.trace_id:
            h["Lambda-Runtime-Trace-Id"] = self.trace_id
        if self.client_context:
            h["Lambda-Runtime-Client-Context"] = self.client_context
        if self.cognito_identity:
            h["Lambda-Runtime-Cognito-Identity"] = self.cognito_identity
        return h


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"errorMessage": message, "errorType": error_type}).encode()


class RuntimeAPIServer:
    """Serves the Runtime API for one process on ``host:port`` (port 0: a free one)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._cond = threading.Condition()
        self._pending: deque[Invocation] = deque()
        self._inflight: dict[str, Invocation] = {}
        self._closed = False
        self.ready = threading.Event()  # set by the first GET /next: init is over
        self.init_error: tuple[str | None, bytes] | None = None
        self.init_error_event = threading.Event()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.api = self
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """host:port, the value of AWS_LAMBDA_RUNTIME_API."""
        host, port = self._httpd.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> "RuntimeAPIServer":
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"hostexec-runtime-api-{self.address}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def submit(self, invocation: Invocation) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("runtime API server is closed")
            self._pending.append(invocation)
            self._cond.notify_all()

    def forget(self, invocation: Invocation) -> None:
        """Drops an invocation that was given up (timed out): late answers get 400."""
        with self._cond:
            try:
                self._pending.remove(invocation)
            except ValueError:
                pass
            self._inflight.pop(invocation.request_id, None)

    # --- called by the handler -------------------------------------------------

    def _next(self) -> Invocation | None:
        self.ready.set()
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            inv = self._pending.popleft()
            self._inflight[inv.request_id] = inv
        inv.delivered.set()
        return inv

    def _answer(self, request_id: str, body: bytes, is_error: bool, error_type: str | None) -> tuple[int, bytes]:
        with self._cond:
            inv = self._inflight.pop(request_id, None)
        if inv is None:
            return 400, error_body("InvalidRequestID", f"Invalid request ID: {request_id!r}")
        if not is_error and len(body) > MAX_RESPONSE_BYTES:
            inv.complete(
                error_body(
                    "Function.ResponseSizeTooLarge",
                    f"Response payload size ({len(body)} bytes) exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes).",
                ),
                True,
                "Function.ResponseSizeTooLarge",
            )
            return 413, error_body("RequestEntityTooLarge", "response payload too large")
        if not inv.complete(body, is_error, error_type):
            return 400, error_body("InvalidStateTransition", f"Request {request_id} already answered")
        return 202, b'{"status":"OK"}'

    def _init_error(self, error_type: str | None, body: bytes) -> None:
        if self.init_error is None:
            self.init_error = (error_type, body)
        self.init_error_event.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    api: RuntimeAPIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the runtimes hold one connection
    server: _Server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - BaseHTTPRequestHandler's signature
        LOG.debug("runtime api %s: " + format, self.address_string(), *args)

    # --- body ------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            raise ValueError(f"body of {length} bytes")
        return self._read_exact(length)

    def _read_exact(self, n: int) -> bytes:
        data = self.rfile.read(n) if n else b""
        if len(data) != n:
            raise ConnectionError("connection closed inside the request body")
        return data

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise ConnectionError("connection closed inside a chunked body")
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # optional trailers, then the blank line
                    trailer = self.rfile.readline(8192)
                    if trailer in (b"\r\n", b"\n", b""):
                        return bytes(out)
            if len(out) + size > _MAX_BODY_BYTES:
                raise ValueError("chunked body too large")
            out += self._read_exact(size)
            self.rfile.readline(8)  # the CRLF that ends the chunk

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # --- routes ----------------------------------------------------------------

    def do_GET(self) -> None:
        api = self.server.api
        if self.path.split("?", 1)[0] != f"{PREFIX}/invocation/next":
            self._send(404, error_body("NotFound", f"hostexec does not serve GET {self.path}"))
            return
        inv = api._next()
        if inv is None:
            self.close_connection = True
            self._send(503, error_body("ServiceUnavailable", "execution environment is shutting down"))
            return
        self._send(200, inv.payload, inv.headers())

    def do_POST(self) -> None:
        api = self.server.api
        try:
            body = self._read_body()
        except (ValueError, ConnectionError) as e:
            self.close_connection = True
            self._send(400, error_body("InvalidRequest", str(e)))
            return
        path = self.path.split("?", 1)[0]
        error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
        if path == f"{PREFIX}/init/error":
            api._init_error(error_type, body)
            self._send(202, b'{"status":"OK"}')
            return
        parts = path[len(PREFIX) :].strip("/").split("/") if path.startswith(PREFIX + "/") else []
        if len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
            is_error = parts[2] == "error"
            if is_error and not body:
                body = error_body(error_type or "Unhandled", "the runtime reported an error without a body")
            status, answer = api._answer(parts[1], body, is_error, error_type)
            self._send(status, answer)
            return
        self._send(404, error_body("NotFound", f"hostexec does not serve POST {self.path}"))
