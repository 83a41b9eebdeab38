"""The Runtime API server alone, spoken to over raw sockets."""

import json
import socket
import threading

import pytest

from hostexec.runtime_api import MAX_RESPONSE_BYTES, Invocation, RuntimeAPIServer


@pytest.fixture
def server():
    s = RuntimeAPIServer().start()
    yield s
    s.close()


def raw(server: RuntimeAPIServer, request: bytes, sock: socket.socket | None = None) -> tuple[int, dict, bytes]:
    host, port = server.address.rsplit(":", 1)
    own = sock is None
    sock = sock or socket.create_connection((host, int(port)), timeout=10)
    try:
        sock.sendall(request)
        return read_response(sock)
    finally:
        if own:
            sock.close()


def read_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    f = sock.makefile("rb")
    status = int(f.readline().split()[1])
    headers = {}
    while True:
        line = f.readline().decode().strip()
        if not line:
            break
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers.get("content-length", 0)))
    return status, headers, body


def fetch_next(server) -> tuple[socket.socket, dict, bytes]:
    host, port = server.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, body = read_response(sock)
    assert status == 200
    return sock, headers, body


def submit(server, rid="r1", payload=b'{"a":1}') -> Invocation:
    inv = Invocation(rid, payload, "arn:fn", 1234567890123, trace_id="Root=1-2-3")
    server.submit(inv)
    return inv


def test_next_delivers_payload_and_headers(server):
    inv = submit(server)
    assert not server.ready.is_set()
    sock, headers, body = fetch_next(server)
    sock.close()
    assert server.ready.is_set()
    assert body == b'{"a":1}'
    assert headers["lambda-runtime-aws-request-id"] == "r1"
    assert headers["lambda-runtime-deadline-ms"] == "1234567890123"
    assert headers["lambda-runtime-invoked-function-arn"] == "arn:fn"
    assert headers["lambda-runtime-trace-id"] == "Root=1-2-3"
    assert inv.delivered.is_set() and not inv.done.is_set()


def test_next_blocks_until_an_invocation_arrives(server):
    got = {}

    def poll():
        sock, headers, body = fetch_next(server)
        got["rid"] = headers["lambda-runtime-aws-request-id"]
        sock.close()

    t = threading.Thread(target=poll)
    t.start()
    t.join(0.3)
    assert t.is_alive(), "GET /next must long-poll"
    submit(server, "late")
    t.join(5)
    assert got["rid"] == "late"


def test_chunked_response_is_decoded(server):
    """aws-lambda-go posts chunked: without decoding, batchItemFailures would be lost."""
    inv = submit(server)
    sock, _, _ = fetch_next(server)
    answer = json.dumps({"batchItemFailures": [{"itemIdentifier": "m-2"}]}).encode()
    chunks = [answer[:5], answer[5:20], answer[20:]]
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-Trailer: t\r\n\r\n"
    status, _, reply = raw(
        server,
        b"POST /2018-06-01/runtime/invocation/r1/response HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body,
        sock,
    )
    sock.close()
    assert status == 202, reply
    assert inv.done.is_set() and not inv.is_error
    assert json.loads(inv.body) == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}


def test_keep_alive_connection_serves_next_after_response(server):
    submit(server, "a")
    submit(server, "b")
    sock, headers, _ = fetch_next(server)
    assert headers["lambda-runtime-aws-request-id"] == "a"
    status, _, _ = raw(server, b"POST /2018-06-01/runtime/invocation/a/response HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", sock)
    assert status == 202
    status, headers, body = raw(server, b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n", sock)
    assert status == 200 and headers["lambda-runtime-aws-request-id"] == "b"
    sock.close()


def test_error_with_type_header(server):
    inv = submit(server)
    sock, _, _ = fetch_next(server)
    err = b'{"errorMessage":"boom","errorType":"MyError"}'
    status, _, _ = raw(
        server,
        b"POST /2018-06-01/runtime/invocation/r1/error HTTP/1.1\r\nHost: x\r\n"
        b"Lambda-Runtime-Function-Error-Type: MyError\r\nContent-Length: %d\r\n\r\n%s" % (len(err), err),
        sock,
    )
    sock.close()
    assert status == 202
    assert inv.is_error and inv.error_type == "MyError" and inv.body == err


def test_unknown_and_repeated_request_ids_are_refused(server):
    submit(server)
    sock, _, _ = fetch_next(server)
    post = b"POST /2018-06-01/runtime/invocation/%s/response HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    assert raw(server, post % b"nope", sock)[0] == 400
    assert raw(server, post % b"r1", sock)[0] == 202
    assert raw(server, post % b"r1", sock)[0] == 400
    sock.close()


def test_forgotten_invocation_refuses_a_late_answer(server):
    inv = submit(server)
    sock, _, _ = fetch_next(server)
    inv.complete(b"timeout", True, "Sandbox.Timedout")
    server.forget(inv)
    status, _, _ = raw(server, b"POST /2018-06-01/runtime/invocation/r1/response HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", sock)
    sock.close()
    assert status == 400
    assert inv.body == b"timeout"


def test_too_large_response_becomes_an_error(server):
    inv = submit(server)
    sock, _, _ = fetch_next(server)
    big = b"x" * (MAX_RESPONSE_BYTES + 1)
    status, _, _ = raw(server, b"POST /2018-06-01/runtime/invocation/r1/response HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big), sock)
    sock.close()
    assert status == 413
    assert inv.is_error and inv.error_type == "Function.ResponseSizeTooLarge"


def test_init_error(server):
    body = b'{"errorMessage":"bad","errorType":"Init.Bad"}'
    status, _, _ = raw(
        server,
        b"POST /2018-06-01/runtime/init/error HTTP/1.1\r\nHost: x\r\nLambda-Runtime-Function-Error-Type: Init.Bad\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
    )
    assert status == 202
    assert server.init_error_event.is_set()
    assert server.init_error == ("Init.Bad", body)


def test_unknown_path_is_404(server):
    assert raw(server, b"GET /2020-01-01/extension/event/next HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 404


def test_close_releases_a_waiting_next(server):
    result = {}

    def poll():
        host, port = server.address.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            result["status"] = read_response(s)[0]
        except (OSError, IndexError, ValueError):
            result["status"] = "closed"
        s.close()

    t = threading.Thread(target=poll)
    t.start()
    t.join(0.3)
    server.close()
    t.join(5)
    assert not t.is_alive()
    assert result["status"] in (503, "closed")
