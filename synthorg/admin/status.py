"""What an operator asks of a running node first (the spec's AdminStatus, less the card cache).

Release and contract, since when this process runs, the store and its schema, the workers,
the peers, the tasks by state and the push deliveries owed: each read from where it lives,
at the moment of asking, in a handful of cheap queries.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from synthorg.contract.spec import bundled_openapi
from synthorg.dialects.objects import counts_v03
from synthorg.generated.constants import (
    STATE_AUTH_REQUIRED,
    STATE_CANCELED,
    STATE_COMPLETED,
    STATE_FAILED,
    STATE_INPUT_REQUIRED,
    STATE_REJECTED,
    STATE_SUBMITTED,
    STATE_WORKING,
)
from synthorg.release import release
from synthorg.store.backend import Stores

# Every state a task can be in, in lifecycle order ("unknown" is a peer's answer, never ours).
TASK_STATES = (
    STATE_SUBMITTED,
    STATE_WORKING,
    STATE_INPUT_REQUIRED,
    STATE_AUTH_REQUIRED,
    STATE_COMPLETED,
    STATE_CANCELED,
    STATE_FAILED,
    STATE_REJECTED,
)


class NodeStatus:
    def __init__(self, stores: Stores, allowed_peers: Collection[str], workers: int) -> None:
        self._stores = stores
        self._allowed = len(allowed_peers)
        self._started_wall = time.time()
        self._started = time.monotonic()
        self._release = release()
        self._spec = str(bundled_openapi()["info"]["version"])
        self._workers = workers

    async def document(self) -> dict[str, Any]:
        stores = self._stores
        current, latest = await stores.schema_versions()
        counts = counts_v03(await stores.tasks.count_by_state())  # the admin API's names
        tasks = {state: counts.get(state, 0) for state in TASK_STATES}
        return {
            "version": self._release,
            "specVersion": self._spec,
            "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._started_wall)),
            "uptimeSeconds": int(time.monotonic() - self._started),
            "store": {"backend": stores.backend, "schemaVersion": current,
                      "schemaLatest": latest},
            "workers": self._workers,
            "peers": {"allowed": self._allowed,
                      "inCatalog": len(stores.catalog.addresses().list())},
            "tasks": tasks,
            "pushOutboxDepth": await stores.push_outbox.pending(),
        }
