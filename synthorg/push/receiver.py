"""The receiving end of signed pushes: `POST /api/v1/webhooks/{peer}/a2a_push`.

A push is verified before anything it says is used: the peer must be in the catalog, the
signature (HMAC-SHA256 with the link secret of the timestamp, the delivery id, the receiver
path and the body: `push.signing`) must match in constant time, the timestamp must lie
within `a2a.push_verification_clock_skew_seconds` of now (read at each request; 0 turns the
freshness check off), and its delivery id must be new for the peer (kept durably, so a
replay to another worker or after a restart is refused too). Each refusal is an event with
its reason. A verified push updates the delegation record of the downstream task it names,
if this node has one (a record never leaves a final state nor goes back in the task's own
order: `store.delegations.supersedes`); either way it is an event.

A push without X-A2A-Signature may instead carry A2A's own form: `Authorization: Bearer
<credential>` and/or X-A2A-Notification-Token `<credential>` (each one sent must match), where
the credential is the one this node registered for the delegation the body's task belongs to
(`push.signing.push_credential`, compared in constant time). Such a push names no time and
may name no delivery id, so it is as good as the credential: it applies to that delegation
only, and the record's own order (never out of a final state, never back in time) is what a
replay meets; a delivery id, when sent, is still refused the second time.

A peer of scheme mtls holds no secret (its record's pin is public), so none of those forms
admits it: its push is admitted by the client certificate the connection's TLS handshake
verified (the ASGI scope's TLS extension, never a header), whose key must be the pinned one
(compared in constant time); any header besides is ignored. The body must then be a task this
node delegated to that peer, and a delivery id, when sent, is refused the second time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from synthorg.dialects.objects import state_v03, task_v1
from synthorg.generated.models import Task
from synthorg.http.numbers import ascii_int
from synthorg.names import canonical_peer_name
from synthorg.observability.events import a2a as events
from synthorg.observability.log import emit
from synthorg.push.signing import (
    credential_matches,
    push_credential,
    signature_matches,
)
from synthorg.store.catalog import MTLS, Catalog
from synthorg.store.delegations import Delegation, DelegationStore
from synthorg.store.push import PushReceipts
from synthorg.tls import pins

MAX_DELIVERY_ID = 128
MAX_TIMESTAMP_DIGITS = 12
MAX_AUTHORIZATION = 8192  # a longer header is refused unread (a credential is 64 characters)


@dataclass(frozen=True)
class Verdict:
    status: int  # 204 accepted, 400 not a Task, 401 unverifiable, 409 replayed
    reason: str = ""


def receipts_kept_after(now: float, skew: int) -> float | None:
    """The age before which a receipt no longer matters: a push that old can only come with a
    stale timestamp, refused before its receipt is looked at (twice the window, so clocks a
    window apart agree). None when freshness is not checked: every receipt is kept."""
    return now - 2 * skew if skew > 0 else None


def _delivery_id_ok(delivery_id: str) -> bool:
    """Visible ASCII, bounded: it is part of the signed string, and kept as a receipt."""
    return len(delivery_id) <= MAX_DELIVERY_ID and all(
        "!" <= char <= "~" for char in delivery_id
    )


class PushReceiver:
    def __init__(
        self,
        catalog: Catalog,
        receipts: PushReceipts,
        delegations: DelegationStore,
        clock_skew: Callable[[], int],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._catalog, self._receipts, self._delegations = catalog, receipts, delegations
        self._skew, self._clock = clock_skew, clock

    async def receive(
        self,
        peer_name: str,
        body: bytes,
        timestamp: str | None,
        presented: str | None,
        delivery_id: str | None,
        authorization: str | None = None,
        token: str | None = None,
        client_cert: bytes | None = None,
    ) -> Verdict:
        """`client_cert`: the DER certificate the connection's TLS handshake verified."""
        canonical = canonical_peer_name(peer_name)
        record = self._catalog.get(canonical) if canonical else None
        if record is None:
            return self._refused(401, "unknown_peer", peer_name)
        if record.scheme == MTLS:
            # The record holds a pin, which is public: it keys no signature nor credential.
            # The certificate is the credential, as at the peer gate.
            return await self._receive_certified(record.name, record.secret, body,
                                                 delivery_id, client_cert)
        if presented is None and (authorization is not None or token is not None):
            return await self._receive_authorized(record.name, record.secret, peer_name, body,
                                                  delivery_id, authorization, token)
        if timestamp is None or not presented or not delivery_id:
            return self._refused(401, "missing_signature", record.name)
        when = ascii_int(timestamp, MAX_TIMESTAMP_DIGITS)
        if when is None:
            return self._refused(401, "bad_timestamp", record.name)
        if not _delivery_id_ok(delivery_id):
            return self._refused(401, "bad_delivery_id", record.name)
        # signed with the peer's name as the path carries it: a push to another path (its
        # sender's own receiver, say, since the secret is shared both ways) does not verify
        if not signature_matches(record.secret, timestamp, delivery_id, peer_name, body,
                                 presented):
            return self._refused(401, "bad_signature", record.name, delivery_id)
        now = self._clock()
        skew = self._skew()  # read at every request: a runtime settings write applies now
        if skew > 0 and abs(now - when) > skew:
            return self._refused(401, "stale_timestamp", record.name, delivery_id)
        keep_after = receipts_kept_after(now, skew)
        if not await self._receipts.first(record.name, delivery_id, now, keep_after):
            return self._refused(409, "replayed", record.name, delivery_id)
        try:
            task = Task.model_validate_json(body)
        except ValidationError:
            return self._refused(400, "not_a_task", record.name, delivery_id)
        await self._apply(record.name, task, delivery_id)
        return Verdict(204)

    async def _receive_authorized(
        self, peer: str, secret: str, path_name: str, body: bytes, delivery_id: str | None,
        authorization: str | None, token: str | None,
    ) -> Verdict:
        """A2A's form: the credential registered for the delegation the body names. The body
        is read first (the credential is bound to its task), but until the credential
        matches, nothing it says is used and every refusal is the same 401."""
        if delivery_id is not None and not _delivery_id_ok(delivery_id):
            return self._refused(401, "bad_delivery_id", peer)
        try:
            task = Task.model_validate_json(body)
        except ValidationError:
            return self._refused(401, "bad_authorization", peer, delivery_id)
        delegation = await self._delegations.by_remote(peer, task.id)
        if delegation is None:  # no credential was registered for this task
            return self._refused(401, "bad_authorization", peer, delivery_id)
        expected = push_credential(secret, path_name, task.id)
        if authorization is not None and not _bearer_matches(expected, authorization):
            return self._refused(401, "bad_authorization", peer, delivery_id)
        if token is not None and not credential_matches(expected, token):
            return self._refused(401, "bad_authorization", peer, delivery_id)
        return await self._accept_once(peer, task, delivery_id, delegation)

    async def _receive_certified(
        self, peer: str, pin: str, body: bytes, delivery_id: str | None,
        client_cert: bytes | None,
    ) -> Verdict:
        """An mtls peer's push: its pinned certificate proves it, for its own delegations."""
        if client_cert is None:
            return self._refused(401, "missing_certificate", peer)
        if not pins.matches(client_cert, pin):
            return self._refused(401, "certificate_mismatch", peer)
        if delivery_id is not None and not _delivery_id_ok(delivery_id):
            return self._refused(401, "bad_delivery_id", peer)
        try:
            task = Task.model_validate_json(body)
        except ValidationError:
            return self._refused(400, "not_a_task", peer, delivery_id)
        delegation = await self._delegations.by_remote(peer, task.id)
        if delegation is None:
            return self._refused(401, "not_delegated", peer, delivery_id)
        return await self._accept_once(peer, task, delivery_id, delegation)

    async def _accept_once(
        self, peer: str, task: Task, delivery_id: str | None, delegation: Delegation
    ) -> Verdict:
        """The unsigned forms' end: a delivery id is taken once (409 after), then applied to
        the delegation already read."""
        if delivery_id is not None:
            now = self._clock()
            keep_after = receipts_kept_after(now, self._skew())
            if not await self._receipts.first(peer, delivery_id, now, keep_after):
                return self._refused(409, "replayed", peer, delivery_id)
        await self._apply(peer, task, delivery_id, delegation)
        return Verdict(204)

    async def _apply(self, peer: str, task: Task, delivery_id: str | None,
                     delegation: Delegation | None = None) -> None:
        updated = None
        if delegation is None:  # the signed form has not read it yet: one indexed read
            delegation = await self._delegations.by_remote(peer, task.id)
        if delegation is not None:
            # a replayed or late push cannot move the record back: the store keeps the newer
            # (pushes carry the 0.3 Task; the record keeps the 1.0 one)
            updated = await self._delegations.update(delegation.id, task_v1(task))
        emit(events.PUSH_RECEIVED, peer_name=peer, delivery_id=delivery_id, task_id=task.id,
             state=task.status.state, delegation_id=updated.id if updated else None,
             delegation_state=state_v03(updated.state) if updated else None)

    def _refused(
        self, status: int, reason: str, peer: str, delivery_id: str | None = None
    ) -> Verdict:
        emit(events.PUSH_REJECTED, level="warning", peer_name=peer[:64], status=status,
             reason=reason, delivery_id=delivery_id)
        return Verdict(status, reason)


def _bearer_matches(expected: str, authorization: str) -> bool:
    """`Bearer <expected>` (the scheme in any case, RFC 9110), compared in constant time."""
    if len(authorization) > MAX_AUTHORIZATION:
        return False
    scheme, _, credentials = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and credential_matches(expected, credentials.strip())


class ReceiverContext:
    """`handlers.context.PushReceiverContext`: the request's peer, body and headers."""

    def __init__(self, receiver: PushReceiver) -> None:
        self._receiver = receiver

    async def receive(
        self, peer: str, body: bytes, timestamp: str | None, signature: str | None,
        delivery_id: str | None, authorization: str | None = None, token: str | None = None,
        client_cert: bytes | None = None,
    ) -> int:
        verdict = await self._receiver.receive(peer, body, timestamp, signature, delivery_id,
                                               authorization, token, client_cert)
        return verdict.status
