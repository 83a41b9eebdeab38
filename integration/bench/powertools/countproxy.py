"""A tiny counting HTTP proxy for DynamoDB Local (manual checks, smoke.sh).

    python3 countproxy.py --upstream http://127.0.0.1:8000 [--port 0]

Listens on 127.0.0.1 (prints "listening http://127.0.0.1:PORT" on stdout once
ready), forwards every request to the upstream with keep-alive, and counts
per operation (X-Amz-Target) the requests, the responses by status and the
conditional-check failures, and how many requests asked for
ReturnValuesOnConditionCheckFailure and how many failures came back with the
old item. Standard library only.

    GET  /__counts   the counts as JSON
    POST /__reset    zero them
"""

import argparse
import http.client
import json
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with getattr(self, "lock", threading.Lock()):
            self.ops = {}

    def add(self, op, status, rv_on_ccf, ccf, ccf_with_item):
        with self.lock:
            c = self.ops.setdefault(op, {"requests": 0, "status": {}, "return_values_on_ccf": 0,
                                         "conditional_check_failed": 0, "ccf_with_item": 0})
            c["requests"] += 1
            c["status"][str(status)] = c["status"].get(str(status), 0) + 1
            c["return_values_on_ccf"] += rv_on_ccf
            c["conditional_check_failed"] += ccf
            c["ccf_with_item"] += ccf_with_item

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.ops))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args()
    up = urllib.parse.urlsplit(a.upstream)
    counts = Counts()
    local = threading.local()

    def upstream_conn(fresh=False):
        if fresh or getattr(local, "conn", None) is None:
            local.conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
            local.conn.connect()
            local.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return local.conn

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle +
        # delayed ACK add ~40 ms to every response.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def _reply(self, status, body, ctype="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/__counts":
                return self._reply(200, json.dumps(counts.snapshot()).encode())
            self._forward("GET")

        def do_POST(self):
            if self.path == "/__reset":
                counts.reset()
                return self._reply(200, b"{}")
            self._forward("POST")

        def _forward(self, method):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            for attempt in (0, 1):
                try:
                    conn = upstream_conn(fresh=attempt == 1)
                    conn.request(method, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    break
                except (http.client.HTTPException, ConnectionError):
                    if attempt == 1:
                        return self._reply(502, b'{"proxy":"upstream failed"}')
            op = (self.headers.get("X-Amz-Target") or "?").rsplit(".", 1)[-1]
            ccf = resp.status == 400 and b"ConditionalCheckFailed" in data
            counts.add(op, resp.status, int(b"ReturnValuesOnConditionCheckFailure" in body), int(ccf),
                       int(ccf and b'"Item"' in data))
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print(f"listening http://127.0.0.1:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
