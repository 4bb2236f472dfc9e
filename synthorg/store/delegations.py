"""Delegation records: every task this node hands to a peer, and what we last saw of it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from synthorg.store.db import connection_lock, transaction, utc_now


@dataclass(frozen=True)
class Delegation:
    id: str  # local id
    peer: str
    remote_task_id: str
    context_id: str
    message_id: str
    state: str  # last known remote state
    origin_task_id: str | None  # the inbound task this forwards, for onward delegation
    task: dict[str, Any]  # last known remote Task JSON (artifacts included)
    created_at: str
    updated_at: str


class DelegationStore(Protocol):
    async def add(self, record: Delegation) -> None: ...

    async def update(self, local_id: str, task: dict[str, Any]) -> Delegation: ...

    async def get(self, local_id: str) -> Delegation | None: ...

    async def by_origin(self, origin_task_id: str) -> Delegation | None: ...

    async def recent(self, limit: int = 100) -> list[Delegation]: ...


_COLUMNS = (
    "id, peer, remote_task_id, context_id, message_id, state, origin_task_id, body, "
    "created_at, updated_at"
)


def _row(row: tuple[Any, ...]) -> Delegation:
    local_id, peer, remote_id, context_id, message_id, state, origin, body, created, updated = row
    return Delegation(
        local_id,
        peer,
        remote_id,
        context_id,
        message_id,
        state,
        origin,
        json.loads(body),
        created,
        updated,
    )


class SqliteDelegationStore:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = connection_lock(conn) or threading.RLock()

    async def add(self, record: Delegation) -> None:
        await asyncio.to_thread(self._add, record)

    async def update(self, local_id: str, task: dict[str, Any]) -> Delegation:
        return await asyncio.to_thread(self._update, local_id, task)

    async def get(self, local_id: str) -> Delegation | None:
        return await asyncio.to_thread(self._one, "id = ?", local_id)

    async def by_origin(self, origin_task_id: str) -> Delegation | None:
        return await asyncio.to_thread(self._one, "origin_task_id = ?", origin_task_id)

    async def recent(self, limit: int = 100) -> list[Delegation]:
        return await asyncio.to_thread(self._list, limit)

    def _add(self, r: Delegation) -> None:
        with transaction(self._conn, self._lock) as conn:
            conn.execute(
                f"INSERT INTO delegations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    r.id,
                    r.peer,
                    r.remote_task_id,
                    r.context_id,
                    r.message_id,
                    r.state,
                    r.origin_task_id,
                    json.dumps(r.task),
                    r.created_at,
                    r.updated_at,
                ),
            )

    def _update(self, local_id: str, task: dict[str, Any]) -> Delegation:
        with transaction(self._conn, self._lock) as conn:
            updated = conn.execute(
                "UPDATE delegations SET state = ?, body = ?, updated_at = ? WHERE id = ?",
                (task["status"]["state"], json.dumps(task), utc_now(), local_id),
            ).rowcount
        if not updated:
            raise LookupError(f"no delegation {local_id}")
        record = self._one("id = ?", local_id)
        assert record is not None
        return record

    def _one(self, where: str, value: str) -> Delegation | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM delegations WHERE {where} "
                "ORDER BY created_at DESC LIMIT 1",
                (value,),
            ).fetchone()
        return None if row is None else _row(row)

    def _list(self, limit: int) -> list[Delegation]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM delegations ORDER BY created_at DESC, id LIMIT ?",
                (limit,),
            ).fetchall()
        return [_row(row) for row in rows]
