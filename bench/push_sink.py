"""The push bench's receiver: a minimal HTTP/1.1 server on 127.0.0.1 that answers every POST
with 204 at once (keep-alive) and appends one line per push to a file:

    <monotonic seconds> <X-A2A-Delivery-Id> <task id> <task state> <request path>

Run as its own process (`python -m bench.push_sink OUT`), so the node under test competes
with it only for CPU, not for an interpreter lock. It prints its port on stdout when it
listens. The parser is deliberately small: the only client is the node's deliverer, which
sends Content-Length bodies and never chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import IO

REPLY = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
MAX_HEAD = 64 * 1024


class SinkProtocol(asyncio.Protocol):
    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD and self._transport is not None:
                    self._transport.close()
                return
            head = self._buffer[:end].decode("latin-1").split("\r\n")
            fields = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
            length = int(fields.get("content-length", "0"))
            if len(self._buffer) < end + 4 + length:
                return
            body = self._buffer[end + 4:end + 4 + length]
            self._buffer = self._buffer[end + 4 + length:]
            self._record(head[0], fields, body)
            assert self._transport is not None
            self._transport.write(REPLY)

    def _record(self, request_line: str, fields: dict[str, str], body: bytes) -> None:
        path = request_line.split(" ")[1] if " " in request_line else "?"
        try:
            task = json.loads(body)
            task_id, state = task["id"], task["status"]["state"]
        except (ValueError, KeyError, TypeError):
            task_id, state = "-", "-"
        delivery = fields.get("x-a2a-delivery-id", "-")
        self._out.write(f"{time.monotonic():.6f} {delivery} {task_id} {state} {path}\n")


async def serve(out_path: str) -> None:
    with open(out_path, "a", buffering=1 << 16) as out:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: SinkProtocol(out), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        while True:  # flush often enough for the bench to follow the count
            await asyncio.sleep(0.01)
            out.flush()


def main() -> int:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
