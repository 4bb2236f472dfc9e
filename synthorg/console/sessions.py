"""Console sessions: a random id in an HttpOnly, SameSite=Strict cookie, kept on the server.

A session is made only by signing in with the admin token (compared in constant time by
`AdminToken.matches`). It ends at sign-out or `lifetime` seconds after its last request; its
CSRF token, random too, must come back with every form the console posts. The table is bounded:
at `MAX_SESSIONS` the least recently used session is dropped.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "synthorg_console"
MAX_SESSIONS = 256


@dataclass
class Session:
    id: str
    csrf: str
    expires: float  # monotonic seconds

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8", "replace"), self.csrf.encode()
        )


class Sessions:
    def __init__(self, lifetime: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._by_id: OrderedDict[str, Session] = OrderedDict()

    def open(self) -> Session:
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                          self._clock() + self.lifetime)
        self._by_id[session.id] = session
        while len(self._by_id) > MAX_SESSIONS:
            self._by_id.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session by this id, its expiry moved on; None when unknown or expired."""
        if not session_id:
            return None
        session = self._by_id.get(session_id)
        if session is None:
            return None
        now = self._clock()
        if now >= session.expires:
            del self._by_id[session_id]
            return None
        session.expires = now + self.lifetime
        self._by_id.move_to_end(session_id)
        return session

    def close(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._by_id)
