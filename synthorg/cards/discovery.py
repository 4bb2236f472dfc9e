"""Peer card discovery: each catalog peer's card, fetched, validated and kept in a bounded LRU.

- A card is reused while fresh (the peer's `Cache-Control: max-age`, 300 s by default), then
  revalidated with `If-None-Match`; a 304 keeps the card, a 200 replaces it.
- A peer that cannot be reached is recorded as unreachable with the reason (timeout,
  connect_error, too_large, invalid_card, http_status, protocol_error) and retried after
  `FAILURE_RETRY_SECONDS`, so a dead peer does not cost every request a timeout.
- The timeout is read through a callable on every lookup (the `client_timeout_seconds`
  runtime setting); so is the cache bound, and `resize` applies a new bound at once.
- A peer with a pinned card key (`synthorg/cards/pins.py`) must sign its card with that key:
  an unsigned, tampered or otherwise signed card is refused (`card_refused`, with why), not
  kept, and `a2a.card.refused` is written. An unpinned peer's card is kept as unverified.
- A peer of scheme mtls is asked only once its server certificate shows the key its record
  pins (`synthorg.tls.outbound`, as delegation calls are): another one is unreachable
  (connect_error, "its certificate is not the pinned one") before a byte is sent.
- An inbound request waits at most the timeout: fetches run as shared background tasks (one
  per peer at a time, at most `max_concurrent` at once); when the wait ends first, the answer
  counts the peer as unreachable (timeout) and the task still fills the cache for the next one.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from synthorg.cards.fetch import Fetched, Reason, card_url, fetch_card_document
from synthorg.cards.lru import LruCache
from synthorg.cards.peer_card import InvalidCard, read_peer_card
from synthorg.cards.pins import CardPin, parse_pin, verify_pinned
from synthorg.cards.signing import CardSignatureError
from synthorg.generated.constants import (
    CARD_STATUS_OK,
    CARD_STATUS_REFUSED,
    CARD_STATUS_UNREACHABLE,
)
from synthorg.generated.models import PeerCard
from synthorg.observability.log import emit
from synthorg.observability.outbound import outbound_call
from synthorg.tls.outbound import pinned

CARD_FETCHED: Final = "a2a.card.fetched"
CARD_UNREACHABLE: Final = "a2a.card.unreachable"
CARD_REFUSED: Final = "a2a.card.refused"
FAILURE_RETRY_SECONDS = 30.0
MAX_CONCURRENT_FETCHES = 16
DEFAULT_PROBE_TIMEOUT = 10.0

Fetch = Callable[..., Awaitable[Fetched]]
_Key = tuple[str, str, str | None, str | None]  # name, endpoint, card key, tls pin


class PeerEndpoint(Protocol):
    """What discovery needs of a catalog record (`synthorg.store.catalog.PeerRecord`)."""

    @property
    def name(self) -> str: ...

    @property
    def endpoint(self) -> str: ...

    @property
    def card_key(self) -> str | None: ...

    # and, when it has one, `tls_pin` (`PeerAddress`): for an mtls peer, the pin its server
    # certificate must have


class PeerSource(Protocol):
    """The read side of the connection catalog."""

    def get(self, name: str, /) -> PeerEndpoint | None: ...

    def list(self) -> Sequence[PeerEndpoint]: ...


@dataclass(frozen=True, slots=True)
class PeerCardStatus:
    peer: str
    endpoint: str
    card: PeerCard | None  # None: unreachable, see reason
    reason: Reason | None = None
    detail: str = ""
    http_status: int | None = None
    verified: bool = False  # the card's signature is by the peer's pinned key

    @property
    def reachable(self) -> bool:
        return self.card is not None

    @property
    def skill_count(self) -> int | None:
        return None if self.card is None else len(self.card.skills)

    def describe(self) -> str:
        """One line for people: `ok, 3 skills` or `unreachable: timeout (...)`."""
        if self.card is not None:
            count = len(self.card.skills)
            trust = "signature verified" if self.verified else "unverified"
            return f"ok, {count} skill{'' if count == 1 else 's'}, {trust}"
        if self.reason == "card_refused":
            return f"refused: {self.detail}"
        return f"unreachable: {self.reason}" + (f" ({self.detail})" if self.detail else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "peer": self.peer,
            "status": (CARD_STATUS_OK if self.card is not None
                       else CARD_STATUS_REFUSED if self.reason == "card_refused"
                       else CARD_STATUS_UNREACHABLE),
            "verified": self.verified,
            "reason": self.reason,
            "detail": self.detail or None,
            "skills": self.skill_count,
            "url": None if self.card is None else self.card.url,
        }


@dataclass(frozen=True, slots=True)
class _Entry:
    status: PeerCardStatus
    etag: str | None
    fresh_until: float  # on the discovery's clock
    pin: str | None = None  # the card key it was checked against
    tls_pin: str | None = None  # the server certificate pin it was fetched under


class CardDiscovery:
    def __init__(
        self,
        peers: PeerSource,
        timeout: Callable[[], float],
        max_entries: Callable[[], int],
        *,
        clock: Callable[[], float] = time.monotonic,
        fetch: Fetch = fetch_card_document,
        max_concurrent: int = MAX_CONCURRENT_FETCHES,
        failure_retry: float = FAILURE_RETRY_SECONDS,
    ) -> None:
        self._peers = peers
        self._timeout = timeout
        self._max_entries = max_entries
        self._clock = clock
        self._fetch = fetch
        self._max_concurrent = max_concurrent
        self._failure_retry = failure_retry
        self._cache: LruCache[str, _Entry] = LruCache(max_entries())
        self._inflight: dict[_Key, asyncio.Task[PeerCardStatus]] = {}
        self._limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    @property
    def cache(self) -> LruCache[str, _Entry]:
        return self._cache

    def resize(self, max_entries: int) -> None:
        """Apply a new `card_cache_max_entries` now; lowering it evicts at once."""
        self._cache.resize(max_entries)

    def cached(self, name: str) -> PeerCardStatus | None:
        """What is known about a peer without asking it (fresh or not)."""
        entry = self._cache.peek(name)
        return None if entry is None else entry.status

    async def lookup(self, name: str) -> PeerCardStatus | None:
        """The peer's card status; None when the catalog has no such peer."""
        record = self._peers.get(name)
        if record is None:
            return None
        return await self._status(record, self._timeout(), force=False)

    async def lookup_all(self) -> list[PeerCardStatus]:
        """Every catalog peer's card status, fetched concurrently, within one timeout."""
        timeout = self._timeout()
        records = self._peers.list()
        return list(await asyncio.gather(
            *(self._status(r, timeout, force=False) for r in records)
        ))

    async def refresh(self, name: str) -> PeerCardStatus | None:
        """Ask the peer now even if its card is fresh (revalidating when we hold one)."""
        record = self._peers.get(name)
        if record is None:
            return None
        return await self._status(record, self._timeout(), force=True)

    async def _status(self, record: PeerEndpoint, timeout: float, force: bool
                      ) -> PeerCardStatus:
        self._sync_bound()
        name, endpoint, pin = record.name, record.endpoint, record.card_key
        tls_pin = getattr(record, "tls_pin", None)
        entry = self._cache.get(name)
        if entry is not None and (entry.status.endpoint, entry.pin, entry.tls_pin) != (
                endpoint, pin, tls_pin):
            entry = None  # pointed elsewhere, or another key pinned: the old card is moot
        if entry is not None and not force and self._clock() < entry.fresh_until:
            return entry.status
        task = self._task(name, endpoint, pin, tls_pin, entry, timeout)
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if task in done:
            return task.result()
        return PeerCardStatus(name, endpoint, None, "timeout", f"no card within {timeout:g}s")

    def _sync_bound(self) -> None:
        wanted = self._max_entries()
        if wanted != self._cache.max_entries:
            self._cache.resize(wanted)

    def _task(self, name: str, endpoint: str, pin: str | None, tls_pin: str | None,
              entry: _Entry | None, timeout: float) -> asyncio.Task[PeerCardStatus]:
        loop = asyncio.get_running_loop()
        key = (name, endpoint, pin, tls_pin)
        task = self._inflight.get(key)
        if task is not None and task.get_loop() is loop and not task.done():
            return task
        task = loop.create_task(self._refetch(name, endpoint, pin, tls_pin, entry, timeout))
        self._inflight[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))
        return task

    def _forget(self, key: _Key, task: asyncio.Task[PeerCardStatus]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]

    def _limit(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        limit = self._limits.get(loop)
        if limit is None:
            self._limits = {loop: asyncio.Semaphore(self._max_concurrent)}  # drop dead loops
            limit = self._limits[loop]
        return limit

    async def _refetch(self, name: str, endpoint: str, pin: str | None, tls_pin: str | None,
                       entry: _Entry | None, timeout: float) -> PeerCardStatus:
        held = entry if entry is not None and entry.status.card is not None else None
        etag = held.etag if held is not None else None
        # mtls: the card only from the pinned server certificate
        extra = {} if tls_pin is None else {"extensions": {"trace": pinned(tls_pin)}}
        async with self._limit():
            with outbound_call(name, "card") as outcome:
                fetched = await self._fetch(card_url(endpoint), timeout=timeout, etag=etag,
                                            **extra)
                outcome.result = fetched.reason or "ok"
        now = self._clock()
        if fetched.not_modified and held is not None:
            status, etag = held.status, fetched.etag or etag
        elif fetched.reason is None:
            try:
                card = read_peer_card(fetched.document)
            except InvalidCard as exc:
                status = PeerCardStatus(name, endpoint, None, "invalid_card", str(exc)[:200])
            else:
                status = await self._checked(name, endpoint, pin, card, fetched.document,
                                             timeout)
                etag = fetched.etag
        else:
            status = PeerCardStatus(name, endpoint, None, fetched.reason, fetched.detail,
                                    fetched.http_status)
        if status.reason == "card_refused":
            emit(CARD_REFUSED, level="warning", peer_name=name, detail=status.detail)
            self._cache.put(name, _Entry(status, None, now + self._failure_retry, pin,
                                         tls_pin))
        elif status.card is None:
            emit(CARD_UNREACHABLE, level="warning", peer_name=name, reason=status.reason,
                 detail=status.detail)
            self._cache.put(name, _Entry(status, None, now + self._failure_retry, pin,
                                         tls_pin))
        else:
            emit(CARD_FETCHED, peer_name=name, skills=len(status.card.skills),
                 revalidated=fetched.not_modified)
            self._cache.put(name, _Entry(status, etag, now + fetched.max_age, pin, tls_pin))
        return status

    async def _checked(self, name: str, endpoint: str, pin: str | None, card: PeerCard,
                       document: Any, timeout: float) -> PeerCardStatus:
        """The card as verified against the peer's pin; refused when it does not verify."""
        if pin is None:
            return PeerCardStatus(name, endpoint, card)
        try:
            parsed: CardPin = parse_pin(pin)
            await verify_pinned(document, parsed, lambda url: self._jwks(url, timeout))
        except CardSignatureError as exc:
            return PeerCardStatus(name, endpoint, None, "card_refused", f"{exc.reason}: {exc}")
        except ValueError:
            return PeerCardStatus(name, endpoint, None, "card_refused",
                                  "bad_pin: the stored card key is not usable")
        return PeerCardStatus(name, endpoint, card, verified=True)

    async def _jwks(self, url: str, timeout: float) -> Any:
        fetched = await self._fetch(url, timeout=timeout)
        if fetched.reason is not None:
            raise RuntimeError(f"{fetched.reason}: {fetched.detail}")
        return fetched.document


class _Listed:
    """A fixed list of peers standing in for the catalog."""

    def __init__(self, peers: Sequence[PeerEndpoint]) -> None:
        self._peers = list(peers)

    def get(self, name: str, /) -> PeerEndpoint | None:
        return next((p for p in self._peers if p.name == name), None)

    def list(self) -> Sequence[PeerEndpoint]:
        return self._peers


async def probe_peers_async(
    peers: Sequence[PeerEndpoint], timeout: float = DEFAULT_PROBE_TIMEOUT,
    tls: ssl.SSLContext | None = None,
) -> list[PeerCardStatus]:
    """Fetch every peer's card now, concurrently, within `timeout`; in the order given.
    `tls`: what the node's own calls verify with and show (server.tls); None: the defaults."""
    async def fetch(url: str, **options: Any) -> Fetched:
        return await fetch_card_document(url, tls=tls, **options)

    discovery = CardDiscovery(_Listed(peers), lambda: timeout, lambda: max(1, len(peers)),
                              fetch=fetch)
    return await discovery.lookup_all()


def probe_peers(
    peers: Sequence[PeerEndpoint], timeout: float = DEFAULT_PROBE_TIMEOUT,
    tls: ssl.SSLContext | None = None,
) -> list[PeerCardStatus]:
    """For `synthorg-a2a peers list`: each peer's reachability and skill count.

    `status.describe()` is a one-line summary, `status.to_json()` a JSON-ready dict."""
    return asyncio.run(probe_peers_async(peers, timeout, tls))
