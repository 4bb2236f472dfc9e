"""The node's one error root and the domain errors under it.

Services raise these in domain terms; each edge maps them to its wire form (the JSON-RPC
gateway to error codes, the admin API to HTTP statuses and AdminErrors, the CLI to exit
codes). Anything else that escapes a service is a fault: answered 500 without detail.
A message, when given, is safe to show to the caller: it never carries a secret or input.
"""

from __future__ import annotations


class SynthorgError(Exception):
    """Root of every error the node raises on purpose."""

    def __init__(self, message: str | None = None, **detail: object) -> None:
        super().__init__(message or type(self).__name__)
        self.message = message  # None: the edge's canonical wording applies
        self.detail = detail  # machine-readable extras (a limit, a reason, a key)


# -- tasks --------------------------------------------------------------------------------


class TaskNotFound(SynthorgError):
    """No such task for this caller (another peer's task looks exactly like a missing one)."""


class TaskNotCancelable(SynthorgError):
    """The task is already final."""


class UnknownTask(SynthorgError):
    """The operator named a task none of this node's peers has (admin API: 404)."""


class NotCancelable(SynthorgError):
    """The operator asked to cancel a task in a final state (admin API: 409)."""


class TaskTerminal(SynthorgError):
    """A follow-up names a task that is already final."""


class UnsupportedOperation(SynthorgError):
    """A2A 1.0: the operation does not apply to the task as it is (SubscribeToTask on a task
    already final)."""


class TaskBusy(SynthorgError):
    """A follow-up names a task whose agent is still working on it."""


class MessageIdConflict(SynthorgError):
    """A `(peer, messageId)` key was already used with different content."""


class UnknownAgent(SynthorgError):
    """No agent of this node has the requested id."""


class InvalidParams(SynthorgError):
    """Params valid by the schema but refused by a rule of the node (a limit, a role)."""


class DelegationLoop(SynthorgError):
    """The message already passed through this node, or too many nodes."""


# -- peers --------------------------------------------------------------------------------


class UnknownPeer(SynthorgError):
    """No catalog record by that name."""


class PeerUnavailable(SynthorgError):
    """A peer's card could not be read (detail: reason)."""


class PeerExists(SynthorgError):
    """A catalog record by that name already exists."""


class InvalidValue(SynthorgError):
    """A value refused: detail `key` names the field or setting, `allowed` its range."""


class UnknownSetting(SynthorgError):
    """No runtime setting by that name."""


# -- stores -------------------------------------------------------------------------------


class StoreError(SynthorgError):
    """The store could not do what was asked (busy past its bound, disk full, corrupt)."""


class SecretUnreadable(StoreError):
    """A stored secret or the key is unusable (wrong or rotated key, corrupt value). Its
    messages never carry a key or a secret, so they may be shown to the operator."""


class StoreUnavailable(StoreError):
    """The store did not answer within its bounds (unreachable, lost, or too slow). Its
    messages never carry the database's address or credentials."""


class SchemaTooNew(StoreError):
    """The store's schema was written by a newer release than this one: it is not run."""


class VersionConflict(StoreError):
    """Another writer changed the record since it was read; read it again and retry."""
