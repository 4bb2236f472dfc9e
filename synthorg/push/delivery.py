"""Push delivery: the outbox filled as tasks change, and the sender that drains it.

Every write of a task in this process wakes `task_written`; the task is read and, when it
has configs, one outbox row per config is added for the status it reached (a status already
enqueued for a config is not again, so a re-read or a sweep is harmless). A sweep at start and
once per lease enqueues what a crash or another replica left out, so every status a config
was set for is pushed at least once across restarts.

The sender claims due rows (each claim holds a row for CLAIM_LEASE; a sender that dies leaves
it due again), at most MAX_IN_FLIGHT at once and again at once while full batches come back,
POSTs the Task JSON to the config's url through `push.sender` (to the address the SSRF guard
resolved, pinned: no second lookup; connections kept per target; to the owner's own receiver
signed, or for an mtls owner over the node's client certificate to the pinned server
certificate), at most PER_TARGET at once
per host and port, and retries failures with exponential backoff and full jitter up to
MAX_ATTEMPTS.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from synthorg.dialects.objects import task_v03
from synthorg.generated.constants import MEDIA_TYPE_APPLICATION_JSON, PEER_NAME_HEADER
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.push.sender import BadHeader, Peering, PinnedSender, SendError
from synthorg.push.signing import (
    DELIVERY_ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOKEN_HEADER,
    signature,
)
from synthorg.push.ssrf import Target, TargetGuard, TargetRefused, Unresolved
from synthorg.store.catalog import MTLS, Catalog
from synthorg.store.push import Delivery, PushConfigStore, PushOutbox
from synthorg.store.tasks import TaskStore

MAX_ATTEMPTS = 8
BACKOFF_BASE = 0.5  # seconds before the first retry, doubling each time
BACKOFF_CAP = 300.0
PER_TARGET = 4  # concurrent deliveries to one host and port
BATCH = 64  # rows claimed at once
# Claimed deliveries not yet finished, at most: a claim is held for CLAIM_LEASE, so what is
# claimed must be sent well within it (a full load at PER_TARGET per target drains in well
# under a second on a responsive receiver).
MAX_IN_FLIGHT = 256
CLAIM_LEASE = 30.0  # a claimed row is due again after this if its sender vanished
IDLE_POLL = 1.0  # seconds between claims when nothing wakes the sender (retries, replicas)
RETRY_STATUSES = frozenset({408, 425, 429})


class _Delivered:
    """Deliveries that finish in one loop turn are marked delivered in one write (one round
    trip on PostgreSQL, one statement on SQLite); each caller returns once it committed."""

    def __init__(self, outbox: PushOutbox) -> None:
        self._outbox = outbox
        self._ids: list[str] = []
        self._write: asyncio.Task[None] | None = None

    async def mark(self, delivery_id: str) -> None:
        self._ids.append(delivery_id)
        if self._write is None:
            self._write = asyncio.get_running_loop().create_task(self._flush())
        await asyncio.shield(self._write)  # one caller cancelled leaves the write to the rest

    async def _flush(self) -> None:
        ids, self._ids, self._write = self._ids, [], None  # later ones go in the next write
        await self._outbox.delivered_many(ids)


def backoff(attempts: int, rng: Callable[[], float] = random.random) -> float:
    """Seconds before retry number `attempts` (1-based): full jitter under a doubling cap."""
    return float(rng() * min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempts - 1)))


class Deliverer:
    def __init__(
        self,
        tasks: TaskStore,
        configs: PushConfigStore,
        outbox: PushOutbox,
        guard: TargetGuard,
        catalog: Catalog,
        node_name: str | None,
        timeout: Callable[[], float],
        open_secrets: Callable[[dict[str, Any]], dict[str, Any]],  # configs are stored sealed
        clock: Callable[[], float] = time.time,
        on_result: Callable[[str], None] | None = None,  # metrics: delivered, retry, failed
        tls: ssl.SSLContext | None = None,  # server.tls: shown to owners' own receivers
    ) -> None:
        self._tasks, self._configs, self._outbox = tasks, configs, outbox
        self._on_result = on_result or (lambda result: None)
        self._open_secrets = open_secrets
        self._guard, self._catalog, self._node_name = guard, catalog, node_name
        self._timeout, self._clock = timeout, clock
        self._wake = asyncio.Event()
        self._targets: dict[tuple[str, int], asyncio.Semaphore] = {}
        self._jobs: set[asyncio.Task[Any]] = set()
        self._sending = 0  # claimed deliveries not yet finished
        self._delivered = _Delivered(outbox)
        self._sender = PinnedSender()
        self._tls = tls

    # -- filling the outbox -----------------------------------------------------------------

    def task_written(self, task_id: str) -> None:
        """A write of the task in this process (called synchronously by the task streams)."""
        self._spawn(self.enqueue(task_id))

    async def enqueue(self, task_id: str) -> None:
        owners = {stored.peer for stored in await self._configs.for_task(task_id)}
        for peer in owners:
            stored = await self._tasks.get(peer, task_id)
            if stored is None:
                continue
            task = task_v03(stored.task)  # the contract: the 0.3 Task's JSON is POSTed
            body = task.__pydantic_serializer__.to_json(task, by_alias=True, exclude_none=True)
            key = f"{task.status.state}@{task.status.timestamp or ''}"
            added = await self._outbox.enqueue(
                task_id, key, stored.version, body.decode(), self._clock()
            )
            if added:
                self._wake.set()

    async def sweep(self) -> None:
        for _, task_id in await self._outbox.owners():
            await self.enqueue(task_id)

    # -- draining it ------------------------------------------------------------------------

    async def run(self) -> None:
        """Claim and send until cancelled: a full batch is followed by another claim as soon
        as there is room in flight; otherwise the sender waits for a wake or IDLE_POLL."""
        try:
            while True:
                self._wake.clear()
                room = min(BATCH, MAX_IN_FLIGHT - self._sending)
                full = False
                if room > 0:
                    with contextlib.suppress(Exception):  # a store outage: the next turn retries
                        claimed = await self._outbox.claim(self._clock(), CLAIM_LEASE, room)
                        full = len(claimed) == room
                        self._sending += len(claimed)
                        for delivery in claimed:
                            self._spawn(self._sent(delivery))
                if full and self._sending < MAX_IN_FLIGHT:
                    continue  # more may be due now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_POLL)
        finally:
            for job in list(self._jobs):
                job.cancel()
            await self._sender.aclose()

    def _spawn(self, coro: Any) -> None:
        job = asyncio.get_running_loop().create_task(coro)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    async def _sent(self, delivery: Delivery) -> None:
        try:
            await self._deliver(delivery)
        finally:
            self._sending -= 1
            if self._sending == MAX_IN_FLIGHT - BATCH:  # room for a full batch again
                self._wake.set()

    async def _deliver(self, delivery: Delivery) -> None:
        if delivery.config is None:  # deleted since: nothing to send, nothing to retry
            await self._outbox.failed(delivery.id, "the push config was deleted")
            return
        config = self._open_secrets(delivery.config)
        try:
            target = await self._guard.check(str(config["url"]), delivery.peer)
        except Unresolved as unresolved:  # perhaps the resolver's bad moment: try again later
            await self._failed_attempt(delivery, urlsplit(str(config["url"])).hostname or "",
                                       str(unresolved))
            return
        except TargetRefused as refused:
            await self._give_up(delivery, str(refused))
            return
        gate = self._targets.setdefault((target.host, target.port), asyncio.Semaphore(PER_TARGET))
        async with gate:
            try:
                status = await self._post(target, config, delivery)
            except BadHeader as refused:  # the config's own value: no retry will fix it
                await self._give_up(delivery, str(refused))
                return
            except SendError as exc:
                await self._failed_attempt(delivery, target.host, str(exc))
                return
            except Exception as exc:  # whatever a receiver provokes counts as an attempt, so
                # the attempt cap still ends it (left claimed, it would come back every lease)
                await self._failed_attempt(delivery, target.host, type(exc).__name__)
                return
        if 200 <= status < 300 or status == 409:  # 409: the receiver has this delivery id
            await self._delivered.mark(delivery.id)
            self._on_result("delivered")
            emit(events.PUSH_DELIVERED, delivery_id=delivery.id, task_id=delivery.task_id,
                 host=target.host, status=status, attempt=delivery.attempts + 1)
        elif status >= 500 or status in RETRY_STATUSES:
            await self._failed_attempt(delivery, target.host, f"HTTP {status}")
        else:
            await self._give_up(delivery, f"HTTP {status}")

    async def _failed_attempt(self, delivery: Delivery, host: str, reason: str) -> None:
        attempts = delivery.attempts + 1
        if attempts >= MAX_ATTEMPTS:
            await self._give_up(delivery, reason)
            return
        delay = backoff(attempts)
        await self._outbox.retry(delivery.id, self._clock() + delay, reason)
        self._on_result("retry")
        emit(events.PUSH_RETRY_SCHEDULED, level="warning", delivery_id=delivery.id,
             task_id=delivery.task_id, host=host, attempt=attempts, reason=reason,
             retry_in_seconds=round(delay, 3))

    async def _give_up(self, delivery: Delivery, reason: str) -> None:
        await self._outbox.failed(delivery.id, reason)
        self._on_result("failed")
        emit(events.PUSH_FAILED, level="warning", delivery_id=delivery.id,
             task_id=delivery.task_id, attempt=delivery.attempts + 1, reason=reason)

    async def _post(self, target: Target, config: dict[str, Any], delivery: Delivery) -> int:
        body = delivery.body.encode()
        headers = {
            "Host": _host_header(target),
            "Content-Type": MEDIA_TYPE_APPLICATION_JSON,
            DELIVERY_ID_HEADER: delivery.id,
        }
        if self._node_name:
            headers[PEER_NAME_HEADER] = self._node_name
        if config.get("token"):
            headers[TOKEN_HEADER] = str(config["token"])
        authorization = _authorization(config.get("authentication"))
        if authorization:
            headers["Authorization"] = authorization
        # signed only to the owning peer's own receiver (the guard says which that is): any
        # other url gets the plain form, with no link secret in play
        record = self._catalog.get(target.peer) if target.peer and self._node_name else None
        peering = None
        if record is not None and self._node_name:
            # reached as the node's other calls to the peer are: its client certificate shown
            peering = Peering(self._tls)
            if record.scheme == MTLS:
                # an mtls record holds a public pin, never a signing key: the certificates
                # prove both ends (the receiver's must be the pinned one)
                peering = Peering(self._tls, record.secret)
            else:
                timestamp = str(int(self._clock()))
                headers[TIMESTAMP_HEADER] = timestamp
                headers[SIGNATURE_HEADER] = signature(
                    record.secret, timestamp, delivery.id, self._node_name, body
                )
        return await self._sender.post(target, str(config["url"]), headers, body,
                                       self._timeout(), peering)


def _authorization(auth: Any) -> str | None:
    if not isinstance(auth, dict) or not auth.get("credentials"):
        return None
    credentials = str(auth["credentials"])
    for scheme in auth.get("schemes", []):
        if scheme.lower() == "bearer":
            return f"Bearer {credentials}"
        if scheme.lower() == "basic":
            # credentials as user:password, or already encoded
            if ":" in credentials:
                credentials = base64.b64encode(credentials.encode()).decode()
            return f"Basic {credentials}"
    return None


def _host_header(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"
