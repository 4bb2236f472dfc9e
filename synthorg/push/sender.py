"""The deliverer's HTTP/1.1 client: one POST at a time per connection, to the address the SSRF
guard pinned, over connections kept alive per target.

Why not the general client: a push is one small POST whose answer is only a status, sent
hundreds of times a second to the same few receivers. A connection kept per target, a request
written in one buffer and a response parsed in C (httptools, as the server side does) cost a
fraction of a general client's per-request machinery. TLS verifies the certificate against
the URL's host while connecting to the pinned address (SNI = the host).

A push to its owner's own receiver is made as the node's other calls to that peer are
(`Peering`): with the node's client certificate (`server.tls`, `synthorg.tls.context`), and
for an mtls owner only to the server certificate its record pins, checked once the handshake
is done, before a byte of the request is written. Such connections are kept apart from those
to any other URL.

What a receiver can make this client spend is bounded: the whole exchange by the timeout, the
response (headers and body, which is read and dropped) by MAX_RESPONSE_BYTES; a response
that goes beyond it ends the connection (its status, when known, still counts).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import httptools

from synthorg.push.ssrf import Target
from synthorg.tls.outbound import server_matches

MAX_RESPONSE_BYTES = 256 * 1024
MAX_IDLE_PER_TARGET = 8  # connections kept open per target between pushes
MAX_IDLE = 256  # kept open in all: past it, the least recently used target's go first
IDLE_SECONDS = 30.0  # a connection unused this long is closed rather than reused
READ_CHUNK = 64 * 1024
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


class SendError(Exception):
    """The push could not be sent or its answer could not be read; the message says why."""


PIN_MISMATCH = "the receiver's certificate is not the one its owner's catalog record pins"


@dataclass(frozen=True)
class Peering:
    """How the owner's own receiver is reached: `context` verifies its server and presents
    the node's certificate (None: the defaults); `pin`, for an mtls owner, the key its
    server certificate must have."""

    context: ssl.SSLContext | None
    pin: str | None = None


class BadHeader(ValueError):
    """A header value a caller supplied (a token, credentials) that HTTP cannot carry."""


def request_target(url: str) -> str:
    """The url's path and query, percent-encoded where HTTP needs it."""
    parts = urlsplit(url)
    path = quote(parts.path or "/", safe=_PATH_SAFE)
    return f"{path}?{quote(parts.query, safe=_QUERY_SAFE)}" if parts.query else path


def encode_request(target_path: str, headers: Mapping[str, str], body: bytes) -> bytes:
    lines = [f"POST {target_path} HTTP/1.1"]
    for name, value in headers.items():
        if any(c in value for c in "\r\n\0"):
            raise BadHeader(f"the {name} header value contains a line break or NUL")
        lines.append(f"{name}: {value}")
    lines.append(f"Content-Length: {len(body)}")
    try:
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise BadHeader("a header value is not ISO-8859-1 text") from None
    return head + body


@dataclass
class _Response:
    """The httptools callbacks: only whether the head and the whole message were read."""

    head: bool = False
    done: bool = False
    keep_alive: bool = False
    parser: httptools.HttpResponseParser | None = None

    def on_headers_complete(self) -> None:
        self.head = True

    def on_message_complete(self) -> None:
        self.done = True
        # asked now: once the message is complete the parser has reset and answers False
        assert self.parser is not None
        self.keep_alive = self.parser.should_keep_alive()


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def close(self) -> None:
        self.writer.close()


# scheme, host, port, the pinned address; whether it is the owner's receiver, and its pin
Key = tuple[str, str, int, str, bool, str]


class PinnedSender:
    def __init__(self, max_idle: int = MAX_IDLE, idle_seconds: float = IDLE_SECONDS) -> None:
        # target -> its idle connections with the time each was put back; least recently
        # used target first
        self._idle: OrderedDict[Key, list[tuple[float, _Connection]]] = OrderedDict()
        self._idle_count = 0
        self._max_idle, self._idle_seconds = max_idle, idle_seconds
        self._tls: ssl.SSLContext | None = None

    @property
    def idle(self) -> int:
        """Connections kept open between pushes."""
        return self._idle_count

    async def post(
        self, target: Target, url: str, headers: Mapping[str, str], body: bytes,
        timeout: float, peering: Peering | None = None,
    ) -> int:
        """POST `body` to the pinned target; the response status. BadHeader before anything
        is sent; SendError when no status could be read (or an mtls owner's receiver shows
        another certificate than the pinned one)."""
        request = encode_request(request_target(url), headers, body)
        key: Key = (target.scheme, target.host, target.port, target.addresses[0],
                    peering is not None, (peering.pin or "") if peering else "")
        try:
            async with asyncio.timeout(timeout):
                connection = self._take(key)
                if connection is not None:
                    try:
                        return await self._exchange(key, connection, request)
                    except SendError:
                        pass  # a kept connection the receiver had closed: once more, fresh
                connection = await self._open(target, peering)
                return await self._exchange(key, connection, request)
        except TimeoutError:
            raise SendError("timed out") from None

    def _take(self, key: Key) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            since, connection = idle.pop()
            self._idle_count -= 1
            if (now - since <= self._idle_seconds and not connection.reader.at_eof()
                    and not connection.writer.is_closing()):
                return connection
            connection.close()
        return None

    def _put(self, key: Key, connection: _Connection) -> None:
        now = time.monotonic()
        idle = self._idle.get(key)
        if idle is None:
            idle = self._idle[key] = []
        else:
            self._idle.move_to_end(key)
        if len(idle) >= MAX_IDLE_PER_TARGET:
            connection.close()
            return
        idle.append((now, connection))
        self._idle_count += 1
        self._evict(now)

    def _evict(self, now: float) -> None:
        """Close the oldest connections of the least recently used targets while too many
        are kept or they sat unused too long."""
        while self._idle:
            key, idle = next(iter(self._idle.items()))
            if idle and (self._idle_count > self._max_idle
                         or now - idle[0][0] > self._idle_seconds):
                idle.pop(0)[1].close()
                self._idle_count -= 1
            elif idle:
                return
            if not idle:
                del self._idle[key]

    async def _open(self, target: Target, peering: Peering | None) -> _Connection:
        tls = None
        if target.scheme == "https":
            if peering is not None and peering.context is not None:
                tls = peering.context
            else:
                if self._tls is None:
                    self._tls = ssl.create_default_context()
                tls = self._tls
        try:
            reader, writer = await asyncio.open_connection(
                target.addresses[0], target.port, ssl=tls,
                server_hostname=target.host if tls else None, limit=READ_CHUNK,
            )
        except (OSError, ssl.SSLError) as exc:
            raise SendError(type(exc).__name__) from None
        connection = _Connection(reader, writer)
        if peering is not None and peering.pin is not None and not server_matches(
                writer.get_extra_info("ssl_object"), peering.pin):
            connection.close()  # nothing was written on it
            raise SendError(PIN_MISMATCH)
        return connection

    async def _exchange(self, key: Key, connection: _Connection, request: bytes) -> int:
        response = _Response()
        parser = response.parser = httptools.HttpResponseParser(response)
        try:
            connection.writer.write(request)
            await connection.writer.drain()
            read = 0
            while not response.done:
                chunk = await connection.reader.read(READ_CHUNK)
                if not chunk:
                    parser.feed_data(b"")  # a close-delimited body ends here
                    break
                read += len(chunk)
                parser.feed_data(chunk)
                if read > MAX_RESPONSE_BYTES:
                    break
        except (OSError, ssl.SSLError, httptools.HttpParserError,
                httptools.HttpParserUpgrade) as exc:  # a push never switches protocols
            connection.close()
            raise SendError(type(exc).__name__) from None
        except BaseException:  # cancelled or timed out mid-exchange: the connection is unusable
            connection.close()
            raise
        status = parser.get_status_code() if response.head else 0
        if not response.done or not response.keep_alive:
            connection.close()
        else:
            self._put(key, connection)
        if not status:
            raise SendError("no response")
        return int(status)

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for _, connection in idle:
                connection.close()
        self._idle.clear()
        self._idle_count = 0
