"""Console sessions: a random id in an HttpOnly, SameSite=Strict cookie, kept in the node's
store (`ConsoleSessionStore`), so every worker process and every replica serving the node
knows a session the moment it is made, and forgets it at sign-out.

A session is made only by signing in with the admin token (compared in constant time by
`AdminToken.matches`). The store holds a SHA-256 digest of the id, never the id: whoever reads
the store cannot present a session. It ends at sign-out or `lifetime` seconds after its last
request. Its CSRF token, which must come back with every form the console posts, is an HMAC of
a fixed label keyed by the session id: any process can derive it, nobody without the id can,
and it need not be stored. The table is bounded: past `MAX_SESSIONS` the least recently used
sessions are dropped, and expired ones are swept whenever a session is made.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from synthorg.store.console_sessions import ConsoleSessionStore

COOKIE = "synthorg_console"
MAX_SESSIONS = 256
MAX_ID_LENGTH = 128  # a cookie longer than any id made here is not looked up
# The expiry slides with every request, but is written only when it would move by at least
# this much: a write per request would make every page a store write; the price is a session
# ending up to this much sooner than `lifetime` after its last request.
EXTEND_STEP = 60.0
_CSRF_LABEL = b"synthorg console csrf"


@dataclass
class Session:
    id: str
    csrf: str
    expires: float  # wall-clock seconds since the epoch

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8", "replace"), self.csrf.encode()
        )


def _key(session_id: str) -> str:
    # The store finds a session by this digest of a 256-bit random id: how long a lookup
    # takes can tell at most something of a digest, which leads back to no id.
    return hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()


def _csrf(session_id: str) -> str:
    mac = hmac.new(session_id.encode("utf-8", "replace"), _CSRF_LABEL, hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


class Sessions:
    def __init__(self, store: ConsoleSessionStore, lifetime: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.lifetime = lifetime
        self._store = store
        self._clock = clock  # wall clock: the processes sharing the store share its meaning

    async def open(self) -> Session:
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        expires = now + self.lifetime
        await self._store.add(_key(session_id), now, expires, MAX_SESSIONS)
        return Session(session_id, _csrf(session_id), expires)

    async def get(self, session_id: str | None) -> Session | None:
        """The live session by this id, its expiry moved on; None when unknown or expired."""
        if not session_id or len(session_id) > MAX_ID_LENGTH:
            return None
        key = _key(session_id)
        now = self._clock()
        expires = await self._store.expiry(key, now)
        if expires is None:
            return None
        if now + self.lifetime - expires >= EXTEND_STEP:
            expires = now + self.lifetime
            await self._store.extend(key, expires)
        return Session(session_id, _csrf(session_id), expires)

    async def close(self, session_id: str) -> None:
        await self._store.remove(_key(session_id))
