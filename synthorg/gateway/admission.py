"""Open streams stay admitted only while their caller would still be: removing a peer from
the catalog, changing its secret, or taking it off the allowlist ends its streams.

A stream is admitted once, by the gates, at its request; it may then run for hours. Every
POLL_SECONDS one timer per process (not one per stream) starts a fresh request scope, so the
catalog and settings caches see any change made by any writer, and runs the same gates on
each open stream's request headers. A stream the gates now refuse is told so: it ends with
the refusal's reason (`a2a.stream.revoked`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Mapping

from synthorg.gateway.gates import PeerGate, Refused
from synthorg.tasks.streams import POLL_SECONDS


class AdmissionWatch:
    def __init__(
        self,
        gate: PeerGate,
        request_started: Callable[[], Awaitable[None]],
        interval: float = POLL_SECONDS,
    ) -> None:
        self._gate, self._request_started, self._interval = gate, request_started, interval
        # each open stream's request headers, and the client certificate its connection showed
        self._open: dict[asyncio.Future[Refused], tuple[Mapping[str, str], bytes | None]] = {}
        self._ticker: asyncio.Task[None] | None = None

    def watch(self, headers: Mapping[str, str],
              client_cert: bytes | None = None) -> asyncio.Future[Refused]:
        """A future that completes with the gates' refusal once they refuse these headers;
        pass it to `release` when the stream ends."""
        loop = asyncio.get_running_loop()
        revoked: asyncio.Future[Refused] = loop.create_future()
        self._open[revoked] = (headers, client_cert)
        if self._ticker is None or self._ticker.done() or self._ticker.get_loop() is not loop:
            # a context of its own: the ticker outlives the request that started it
            self._ticker = loop.create_task(self._tick(), context=contextvars.Context())
        return revoked

    def release(self, revoked: asyncio.Future[Refused]) -> None:
        self._open.pop(revoked, None)
        revoked.cancel()

    async def _tick(self) -> None:
        while self._open:
            await asyncio.sleep(self._interval)
            with contextlib.suppress(Exception):  # the store unreachable: check next time
                await self._request_started()
                for revoked, (headers, client_cert) in list(self._open.items()):
                    verdict = self._gate.check(headers, client_cert)
                    if isinstance(verdict, Refused) and not revoked.done():
                        revoked.set_result(verdict)
                        self._open.pop(revoked, None)

