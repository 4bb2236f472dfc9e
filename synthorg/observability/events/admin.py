"""Admin API and audit event names.

The five audit events (every change to a runtime setting or an `a2a_peer` record) carry `via`
("admin_api" or "cli"), the setting `key` or `peer` name, and `old` / `new` values; a peer's
secret is never in them, only `secret_changed`. They go to the event stream and, as records,
to the store's audit trail (see `synthorg.admin.audit`).
"""

from __future__ import annotations

from typing import Final

from synthorg.generated.constants import (
    AUDIT_EVENT_ADMIN_PEER_CREATED,
    AUDIT_EVENT_ADMIN_PEER_DELETED,
    AUDIT_EVENT_ADMIN_PEER_REPLACED,
    AUDIT_EVENT_ADMIN_PEERS_REKEYED,
    AUDIT_EVENT_ADMIN_SETTING_CHANGED,
    AUDIT_EVENT_ADMIN_SETTING_RESET,
)

# Audit: one per change.
SETTING_CHANGED: Final = AUDIT_EVENT_ADMIN_SETTING_CHANGED
SETTING_RESET: Final = AUDIT_EVENT_ADMIN_SETTING_RESET
PEER_CREATED: Final = AUDIT_EVENT_ADMIN_PEER_CREATED
PEER_REPLACED: Final = AUDIT_EVENT_ADMIN_PEER_REPLACED
PEER_DELETED: Final = AUDIT_EVENT_ADMIN_PEER_DELETED
# every secret encrypted again: `count` (peers), `push_configs`
PEERS_REKEYED: Final = AUDIT_EVENT_ADMIN_PEERS_REKEYED
AUDIT_EVENTS: Final = frozenset(
    {SETTING_CHANGED, SETTING_RESET, PEER_CREATED, PEER_REPLACED, PEER_DELETED, PEERS_REKEYED}
)

# The admin API itself.
AUTH_FAILED: Final = "admin.auth_failed"  # 401: no, malformed or wrong admin token
REQUEST_REJECTED: Final = "admin.request.rejected"  # 400/404/405/413/415 before the handler
REQUEST_REFUSED: Final = "admin.request.refused"  # the handler refused it (400/404/409)
INTERNAL_ERROR: Final = "admin.internal_error"  # 500
TOKEN_READY: Final = "admin.token.ready"  # where the token came from (never the token)
NON_LOOPBACK: Final = "admin.api.non_loopback"  # the admin API shares a non-loopback socket
PEER_SECRET_IS_ADMIN_TOKEN: Final = "admin.peer_secret_is_admin_token"  # such a peer is refused
AUDIT_WRITE_FAILED: Final = "admin.audit.write_failed"  # a record could not be stored
