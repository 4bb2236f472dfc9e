"""A real HTTP server on 127.0.0.1 that answers from a script, for client tests.

Each request pops the next scripted answer (status, headers, body); what was received is kept
for assertions. A `gate` answer blocks until the test releases it, to exercise timeouts
without sleeping.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CARD_PATH = "/.well-known/agent-card.json"


@dataclass
class Answer:
    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None  # wait for this before answering
    echo_id: bool = False  # copy the request's JSON-RPC id into body["id"]


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ScriptedServer:
    def __init__(self) -> None:
        self.script: deque[Answer] = deque()
        self.received: list[Received] = []
        self.card: dict[str, Any] | None = None  # served at CARD_PATH when set, else 404
        self.card_reads = 0
        self.card_hold: threading.Event | None = None  # set: card reads wait for it
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.command == "GET" and self.path == CARD_PATH:
                    # The card the delegator reads to pick a dialect: outside the script.
                    outer.card_reads += 1
                    if outer.card_hold is not None:
                        outer.card_hold.wait(30)
                    card = json.dumps(outer.card).encode() if outer.card else b"{}"
                    self.send_response(200 if outer.card else 404)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(card)))
                    self.end_headers()
                    self.wfile.write(card)
                    return
                outer.received.append(
                    Received(self.command, self.path, dict(self.headers.items()), body)
                )
                answer = outer.script.popleft() if outer.script else Answer(404, b"{}")
                if answer.hold is not None:
                    answer.hold.wait(30)
                payload = answer.body
                if isinstance(payload, dict):
                    if answer.echo_id:
                        payload = {**payload, "id": json.loads(body)["id"]}
                    payload = json.dumps(payload).encode()
                try:
                    self.send_response(answer.status)
                    for key, value in {
                        "Content-Type": "application/json",
                        **answer.headers,
                    }.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
