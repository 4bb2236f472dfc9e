"""A local OTLP collector stand-in for the bench: accepts OTLP/HTTP exports (any path) and
answers 200 at once (the body read and dropped), so a traced node pays its real export cost."""

from __future__ import annotations

import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@cache
def sink_url() -> str:
    """Start the sink once, for the life of the bench process; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"

