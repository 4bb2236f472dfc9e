"""The console's pages: each reads and changes the node through the admin operations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from synthorg.admin.token import AdminToken
from synthorg.console.admin_calls import AdminCalls
from synthorg.console.app import Console, Request
from synthorg.generated import constants as spec

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def label(key: str) -> str:
    """`cardCacheMaxEntries` -> `Card cache max entries`."""
    words = _WORD.sub(" ", key).replace("_", " ").lower()
    return words[:1].upper() + words[1:]


def shown(value: Any) -> str:
    """A status value as one line of text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(shown(v) for v in value) or "none"
    return "-" if value is None else str(value)


def install(console: Console) -> None:
    console.page("GET", "/console", lambda r, p: overview(console, r, p))


async def overview(console: Console, request: Request, params: Mapping[str, str]) -> Response:
    status = await console.admin(request, spec.ADMIN_STATUS)
    ready = await console.admin(request, spec.HEALTH_READY)
    facts = [(label(k), shown(v)) for k, v in (status.document or {}).items()]
    readiness = shown((ready.document or {}).get("status", "unavailable"))
    return console.render("overview.html", request, facts=facts, readiness=readiness)


def build_console(calls: AdminCalls, token: AdminToken, session_minutes: int) -> Console:
    console = Console(calls, token, session_minutes)
    install(console)
    return console
