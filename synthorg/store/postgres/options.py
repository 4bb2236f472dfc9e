"""How the node reaches PostgreSQL: the URL and the bounds of every wait, from the environment.

`SYNTHORG_DATABASE_URL` selects PostgreSQL. It may hold a password, so it is read from the
environment only (never config.yaml) and never shown: not in an event, an error message or a
repr. The bounds keep every request's wait finite when the database is slow or gone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

URL_ENV = "SYNTHORG_DATABASE_URL"
POOL_SIZE_ENV = "SYNTHORG_DATABASE_POOL_SIZE"
STATEMENT_TIMEOUT_ENV = "SYNTHORG_DATABASE_STATEMENT_TIMEOUT"
CONNECT_TIMEOUT_ENV = "SYNTHORG_DATABASE_CONNECT_TIMEOUT"

DEFAULT_POOL_SIZE = 10  # connections per node process
DEFAULT_STATEMENT_TIMEOUT = 5.0  # seconds one statement may run (server side, then client)
DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds to open a connection, or to wait for a free one
_SCHEMES = ("postgresql", "postgres")


class OptionsError(ValueError):
    """A database setting in the environment is unusable; the message never holds the URL."""


@dataclass(frozen=True)
class Target:
    """Which database, as whom, where: what a person needs to fix a connection."""

    database: str
    user: str | None
    address: str  # host:port


@dataclass(frozen=True)
class PgOptions:
    url: str = field(repr=False)
    pool_size: int = DEFAULT_POOL_SIZE
    statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT

    @property
    def command_timeout(self) -> float:
        """The client's own bound on a statement: the server's, plus a margin for the trip
        (it holds when the server stops answering at all)."""
        return self.statement_timeout + 1.0

    @property
    def server_settings(self) -> dict[str, str]:
        ms = str(max(1, int(self.statement_timeout * 1000)))
        return {
            "statement_timeout": ms,
            "idle_in_transaction_session_timeout": str(int(ms) * 4),
            "application_name": "synthorg-a2a",
        }

    def target(self) -> Target:
        """Where the URL points, for messages: never its password."""
        try:
            parts = urlsplit(self.url)
            host, port = parts.hostname, parts.port
        except ValueError:
            parts, host, port = urlsplit(""), None, None
        query = parse_qs(parts.query)
        host = host or next(iter(query.get("host", [])), None) or "localhost"
        user = (unquote(parts.username) if parts.username
                else next(iter(query.get("user", [])), None))
        database = unquote(parts.path.lstrip("/")) or user or "postgres"
        shown_host = f"[{host}]" if ":" in host else host
        return Target(database, user, f"{shown_host}:{port or 5432}")


def url_from(env: Mapping[str, str] | None = None) -> str | None:
    """The database URL when PostgreSQL is selected, else None (SQLite)."""
    raw = (env if env is not None else os.environ).get(URL_ENV, "").strip()
    return raw or None


def options_from(env: Mapping[str, str] | None = None) -> PgOptions | None:
    """PostgreSQL's options when `SYNTHORG_DATABASE_URL` is set; OptionsError when a value is
    unusable (its message names the variable, never the URL's content)."""
    env = env if env is not None else os.environ
    url = url_from(env)
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        scheme = parts.scheme
    except ValueError:
        scheme = ""
    if scheme not in _SCHEMES:
        raise OptionsError(f"{URL_ENV} must be a postgresql:// URL")
    return PgOptions(
        url,
        pool_size=int(_number(env, POOL_SIZE_ENV, DEFAULT_POOL_SIZE, 1, 200, integer=True)),
        statement_timeout=_number(env, STATEMENT_TIMEOUT_ENV, DEFAULT_STATEMENT_TIMEOUT, 0.1, 600),
        connect_timeout=_number(env, CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT, 0.1, 600),
    )


def _number(env: Mapping[str, str], name: str, default: float, low: float, high: float,
            *, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    kind = "an integer" if integer else "a number"
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise OptionsError(f"{name} must be {kind} from {low:g} to {high:g}; got {raw!r}"
                           ) from None
    if not low <= value <= high:
        raise OptionsError(f"{name} must be {kind} from {low:g} to {high:g}; got {raw!r}")
    return value
