"""One bounded GET of a card: a total deadline, a size cap, and If-None-Match revalidation.

Nothing here trusts the peer: the body is streamed and dropped as soon as it passes the cap
(a declared Content-Length over the cap is refused before reading), compressed bodies are not
accepted (we ask for `identity`, so nothing can inflate past the cap), redirects are not
followed, and the whole exchange, however slowly the peer drips bytes, ends at the deadline.
The environment is not consulted (`trust_env=False`): no proxy variables, no .netrc
credentials sent to a peer's card endpoint.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from synthorg.generated.constants import (
    CARDS_COMPANY_CARD,
    IF_NONE_MATCH_HEADER,
    MEDIA_TYPE_APPLICATION_JSON,
)
from synthorg.http.caching import DEFAULT_MAX_AGE, freshness_seconds, usable_etag
from synthorg.http.headers import content_length
from synthorg.http.numbers import json_int
from synthorg.observability.outbound import trace_headers
from synthorg.tls.context import public_trust
from synthorg.tls.outbound import PinMismatch

CARD_PATH = CARDS_COMPANY_CARD.path
MAX_CARD_BYTES = 256 * 1024
USER_AGENT = "synthorg-a2a card-discovery"
MAX_JSON_DEPTH = 64

Reason = Literal[
    "timeout", "connect_error", "too_large", "invalid_card", "http_status", "protocol_error",
    "card_refused",
]


@dataclass(frozen=True, slots=True)
class Fetched:
    """A 200 (document set), a 304 (not_modified), or a failure (reason set)."""

    document: Any = None
    not_modified: bool = False
    etag: str | None = None
    max_age: float = DEFAULT_MAX_AGE
    reason: Reason | None = None
    detail: str = ""  # short and safe to log or print: never body bytes
    http_status: int | None = None


def card_url(endpoint: str) -> str:
    return endpoint.rstrip("/") + CARD_PATH


def _failed(reason: Reason, detail: str, http_status: int | None = None) -> Fetched:
    return Fetched(reason=reason, detail=detail, http_status=http_status)


class _TooLarge(Exception):
    pass


PIN_MISMATCH = "its certificate is not the pinned one"  # an mtls peer's, as a reason's detail


async def fetch_card_document(
    url: str,
    *,
    timeout: float,
    etag: str | None = None,
    max_bytes: int = MAX_CARD_BYTES,
    transport: httpx.AsyncBaseTransport | None = None,
    tls: ssl.SSLContext | None = None,
    extensions: dict[str, Any] | None = None,
) -> Fetched:
    """GET `url`; with `etag`, a 304 answer comes back as `not_modified`. Never raises.
    `tls`: what an https URL is verified with and shown (server.tls); None: the defaults.
    `extensions`: the request's (an mtls peer's pin check, synthorg.tls.outbound)."""
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(url, timeout, etag, max_bytes, transport, tls, extensions)
    except PinMismatch:
        return _failed("connect_error", PIN_MISMATCH)
    except (TimeoutError, httpx.TimeoutException):
        return _failed("timeout", f"no complete answer within {timeout:g}s")
    except httpx.ConnectError:
        return _failed("connect_error", "could not connect")
    except httpx.NetworkError as exc:
        return _failed("connect_error", f"connection failed ({type(exc).__name__})")
    except _TooLarge:
        return _failed("too_large", f"card larger than {max_bytes} bytes")
    except Exception as exc:  # a malformed URL or answer: the peer is unusable, not us
        return _failed("protocol_error", f"unusable answer ({type(exc).__name__})")


async def _fetch(
    url: str,
    timeout: float,
    etag: str | None,
    max_bytes: int,
    transport: httpx.AsyncBaseTransport | None,
    tls: ssl.SSLContext | None = None,
    extensions: dict[str, Any] | None = None,
) -> Fetched:
    headers = {"Accept": MEDIA_TYPE_APPLICATION_JSON, "Accept-Encoding": "identity",
               "User-Agent": USER_AGENT}
    if etag is not None:
        headers[IF_NONE_MATCH_HEADER] = etag
    trace_headers(headers)
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False,
        transport=transport, verify=tls if tls is not None else public_trust(),
    ) as client, client.stream("GET", url, headers=headers, extensions=extensions) as response:
        status = response.status_code
        new_etag = usable_etag(response.headers.get("etag"))
        max_age = freshness_seconds(response.headers.get("cache-control"))
        if status == 304 and etag is not None:
            return Fetched(not_modified=True, etag=new_etag or etag, max_age=max_age)
        if status != 200:
            return _failed("http_status", f"HTTP {status}", status)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return _failed("invalid_card", "compressed body (content-encoding) not accepted")
        declared = content_length(response.headers.get("content-length", ""))
        if declared is not None and declared > max_bytes:
            raise _TooLarge
        body = await _read_capped(response, max_bytes)
    document = _parse(body)
    if document is None:
        return _failed("invalid_card", "body is not UTF-8 JSON")
    return Fetched(document=document, etag=new_etag, max_age=max_age)


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_raw():
        total += len(chunk)
        if total > max_bytes:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _parse(body: bytes) -> Any:
    """The JSON document, or None. Depth is bounded so validation never recurses deeply."""
    try:
        document = json.loads(body.decode("utf-8"), parse_constant=_reject_constant,
                              parse_int=json_int)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return document if _depth_ok(document) else None


def _depth_ok(document: Any) -> bool:
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return False
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return True
