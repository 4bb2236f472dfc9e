"""Store event names: the database's reachability, as the node sees it.

None of them ever carries the database URL (it may hold a password), only a short reason
(the exception's type, or a cause worded by the node).
"""

from __future__ import annotations

from typing import Final

UNAVAILABLE: Final = "store.unavailable"  # a query or connection failed: `reason`, `during`
AVAILABLE: Final = "store.available"  # it answers again after `store.unavailable`
MIGRATED: Final = "store.migrated"  # migrations applied at start: `backend`, `from`, `to`
WAITING: Final = "store.waiting"  # at start: not reachable yet, retried in `retry_in` s
# PostgreSQL: catalog and settings changes arrive by notification on a connection of its own
LISTENING: Final = "store.revisions.listening"  # it listens: requests read no counters
POLLING: Final = "store.revisions.polling"  # it was lost (`reason`): each loop turn's requests
# read the counters again until it listens anew, retried from `retry_in` s
