"""Outbound delegation: hand a task to a catalog peer, record it, and follow it.

Records live in the node's store, so a CLI in another process and the node itself see the
same delegations. Following polls `tasks/get` with capped exponential backoff until the task
is final or needs input; a peer that goes away meanwhile is retried by the client.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc
import httpx
from pydantic import ValidationError

from synthorg.cards.fetch import card_url, fetch_card_document
from synthorg.cards.peer_card import InvalidCard, read_peer_card
from synthorg.clock import utc_now
from synthorg.delegation.client import A2AClient, build_message, default_rpc_url, stream_params
from synthorg.delegation.errors import (
    PeerError,
    PeerMisconfigured,
    PeerProtocolError,
    PeerUnavailable,
)
from synthorg.delegation.grpc_peers import grpc_allowed, refuse_grpc
from synthorg.delegation.pool import ClientPool
from synthorg.delegation.rest_binding import default_rest_url
from synthorg.delegation.sse_client import Events, stream_call
from synthorg.dialects.objects import state_v03
from synthorg.dialects.outbound import GRPC, JSONRPC, BindingUnusable, PeerDialect, choose
from synthorg.generated.constants import (
    PUSH_RECEIVE,
    TASK_STATE_AUTH_REQUIRED,
    TASK_STATE_INPUT_REQUIRED,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    V1_SEND_STREAMING_MESSAGE,
    V1_TERMINAL_STATES,
)
from synthorg.generated.models import (
    PeerCard,
    V1CreateTaskPushNotificationConfigParams,
    V1Part,
    V1Task,
)
from synthorg.push.signing import push_credential
from synthorg.store.catalog import MTLS, Catalog
from synthorg.store.delegations import Delegation, DelegationStore

DIALECT_TTL_SECONDS = 300.0  # how long a peer's card decides its binding before a re-read
# A delegation's states are 1.0's names (the records keep 1.0 tasks).
SETTLED = V1_TERMINAL_STATES | {TASK_STATE_INPUT_REQUIRED, TASK_STATE_AUTH_REQUIRED}


class DelegationError(Exception):
    """A delegation could not be started or followed; the message is safe to show."""


FOLLOW_CONFIG_ID = "synthorg-follow"  # the push config a follower registers downstream
PUSH_AUTH_SCHEME = "Bearer"  # how the peer presents the push credential
# Followed by push: the local record (updated by each verified push) is read this often, and
# the peer is still polled, rarely, in case a push is lost for good.
PUSHED_READ, PUSHED_POLL = 0.5, 30.0


def push_url(public_url: str | None, peer: str) -> str | None:
    """Where `peer` may push to this node: its receiver, under the name we know the peer by."""
    if not public_url:
        return None
    return public_url.rstrip("/") + PUSH_RECEIVE.path.format(peer=peer)


class Delegator:
    def __init__(
        self,
        catalog: Catalog,
        store: DelegationStore,
        local_name: str | None,
        timeout: Callable[[], float],
        transport: httpx.AsyncBaseTransport | None = None,
        tls: ssl.SSLContext | None = None,
        grpc_tls: grpc.ChannelCredentials | None = None,
    ) -> None:
        self._catalog = catalog
        self._tls = tls  # server.tls: the client certificate shown to peers
        self._grpc_tls = grpc_tls  # the same for gRPC channels
        self.store = store
        self._local_name = local_name
        self._timeout = timeout
        self._transport = transport
        # The peers' HTTP clients: pooled while the node serves (it opens and closes the pool)
        self.pool = ClientPool()
        # (peer, endpoint) -> (expires at, its card: what decides its binding, its dialect and
        # whether it streams)
        self._cards: dict[tuple[str, str], tuple[float, PeerCard | None]] = {}

    def client(self, peer: str, dialect: PeerDialect | None = None) -> A2AClient:
        """A client for `peer`; in 0.3 unless `dialect` says otherwise."""
        if not self._local_name:
            raise DelegationError(
                "a2a.node_name is not set: add the name peers know this node by to config.yaml"
            )
        record = self._catalog.get(peer)
        if record is None:
            raise DelegationError(f"no catalog record for peer {peer!r}")
        return A2AClient(
            record, self._local_name, self._timeout, transport=self._transport, dialect=dialect,
            tls=self._tls, grpc_tls=self._grpc_tls, pool=self.pool,
        )

    async def peer_client(self, peer: str, binding: str | None = None) -> A2AClient:
        """A client that calls `peer` in `binding` (a delegation's: the one it was sent in),
        else the binding its catalog record configures, else the first its card offers that
        this node speaks (`dialects.outbound.choose`)."""
        client = self.client(peer)
        return self.client(peer, await self._dialect(client, binding or client.record.binding))

    async def record_client(self, record: Delegation) -> A2AClient:
        """A client for a delegation's peer in the binding the delegation was sent in (one
        recorded before bindings were chosen went by JSON-RPC)."""
        return await self.peer_client(record.peer, record.binding or JSONRPC)

    async def streams(self, peer: str) -> bool:
        """Whether `peer`'s tasks can be followed by stream: its card says
        `capabilities.streaming` (tasks/resubscribe in 0.3, SubscribeToTask in 1.0)."""
        card = await self._card(self.client(peer))
        return bool(card and card.capabilities and card.capabilities.streaming)

    async def _dialect(self, client: A2AClient, binding: str | None) -> PeerDialect:
        endpoint, scheme = client.record.endpoint, client.record.scheme
        if binding == GRPC:
            refuse_grpc(client.record.name, scheme)  # before its card is even read
        card = await self._card(client)
        try:
            return choose(card, endpoint, default_rpc_url(endpoint), binding,
                          default_rest_url(endpoint), mtls=not grpc_allowed(scheme))
        except BindingUnusable as exc:
            if card is None and binding == GRPC:
                # Only its card names the gRPC target, and it could not be read (the peer is
                # down, or restarting): a failure to try again, with the card read anew.
                self._cards.pop((client.record.name, client.record.endpoint), None)
                raise PeerUnavailable(
                    f"{client.record.name}: its card, which names its gRPC target, cannot be "
                    "read"
                ) from None
            raise DelegationError(f"peer {client.record.name}: {exc}") from None

    async def _card(self, client: A2AClient) -> PeerCard | None:
        """The peer's card as last read (None: none, or unreadable), read again after
        DIALECT_TTL_SECONDS."""
        key = (client.record.name, client.record.endpoint)
        now = time.monotonic()
        cached = self._cards.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        fetched = await fetch_card_document(
            card_url(client.record.endpoint), timeout=self._timeout(), transport=self._transport,
            tls=self._tls, extensions=client.extensions,  # an mtls peer's: the pinned key only
        )
        card = None
        if fetched.document is not None:
            try:
                card = read_peer_card(fetched.document)
            except InvalidCard:
                card = None
        elif cached is not None:
            # Unreachable now (a restart, a blip): the card last read still says how to call
            # it, so a delegation in a binding only its card names is followed on.
            card = cached[1]
        self._cards[key] = (now + DIALECT_TTL_SECONDS, card)
        return card

    async def delegate(
        self,
        peer: str,
        parts: Sequence[V1Part],
        *,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        origin_task_id: str | None = None,
        message_id: str | None = None,
        blocking: bool = True,
    ) -> Delegation:
        """Send a new task to `peer` and record it. A fixed `message_id` makes a repeat of
        the same delegation land on the peer's existing task (its idempotency key)."""
        client = await self.peer_client(peer)
        message_id = message_id or str(uuid.uuid4())
        task = await client.send_message(
            parts, agent_id=agent_id, message_id=message_id, metadata=metadata,
            blocking=blocking,
        )
        record = self._record(client, task, message_id, origin_task_id)
        await self.store.add(record)
        return record

    async def delegate_streaming(
        self,
        peer: str,
        parts: Sequence[V1Part],
        *,
        agent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        origin_task_id: str | None = None,
        message_id: str | None = None,
    ) -> tuple[Delegation, Events, int | None]:
        """`delegate` by message/stream (for a peer that `streams`): the record is stored
        from the stream's first event, the Task; returned with the stream, open after that
        event, and that event's sequence number, for the follower to go on reading."""
        client = await self.peer_client(peer)
        message_id = message_id or str(uuid.uuid4())
        message = build_message(parts, agent_id=agent_id, message_id=message_id,
                                metadata=metadata)
        events = stream_call(client, stream_params(message))
        try:
            first = await anext(events, None)
            if first is None:
                method = client.wire_method(V1_SEND_STREAMING_MESSAGE)
                raise PeerProtocolError(f"{client.record.name}: {method} sent no event")
            task = client.task_of_event(first[1])
            record = self._record(client, task, message_id, origin_task_id)
            await self.store.add(record)
        except BaseException:
            await events.aclose()
            raise
        return record, events, first[0]

    def _record(
        self, client: A2AClient, task: V1Task, message_id: str, origin_task_id: str | None
    ) -> Delegation:
        now = utc_now()
        return Delegation(
            id=str(uuid.uuid4()),
            peer=client.record.name,
            remote_task_id=task.id,
            context_id=task.contextId,
            message_id=message_id,
            state=task.status.state,
            origin_task_id=origin_task_id,
            task=task,
            created_at=now,
            updated_at=now,
            binding=client.binding,
        )

    async def get(self, local_id: str) -> Delegation:
        record = await self.store.get(local_id)
        if record is None:
            raise DelegationError(f"no outbound task {local_id!r}")
        return record

    async def send_followup(
        self,
        record: Delegation,
        parts: Sequence[V1Part],
        metadata: Mapping[str, Any] | None,
        message_id: str | None = None,
        blocking: bool = True,
    ) -> Delegation:
        task = await (await self.record_client(record)).send_message(
            parts,
            task_id=record.remote_task_id,
            context_id=record.context_id,
            metadata=metadata,
            message_id=message_id,
            blocking=blocking,
        )
        return await self.store.update(record.id, task)

    async def request_pushes(self, record: Delegation, url: str) -> bool:
        """Ask the peer to push its task to `url`; False when it will not (the caller then
        polls): a peer without push support, or one that refuses the url."""
        link = self._catalog.get(record.peer)
        credential = None
        # an mtls link's pin is public: no credential derived from it would prove anything;
        # the peer's pushes are admitted by its pinned client certificate instead
        if link is not None and link.scheme != MTLS:
            # A2A's own push authentication, for a peer that does not sign its pushes: the
            # credential is good for this task from this peer only (`push.signing`). A peer
            # that signs sends it too; its signature is what the receiver verifies then.
            credential = push_credential(link.secret, record.peer, record.remote_task_id)
        try:
            auth: dict[str, Any] = {} if credential is None else {
                "token": credential,  # 0.3's X-A2A-Notification-Token
                "authentication": {"scheme": PUSH_AUTH_SCHEME, "credentials": credential},
            }
            params = V1CreateTaskPushNotificationConfigParams.model_validate({
                "method": V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG, "taskId": record.remote_task_id,
                "url": url, "id": FOLLOW_CONFIG_ID, **auth})
        except ValidationError:  # a url past the spec's bounds: the peer would refuse it
            return False
        try:
            # In the dialect the task was sent in (the card is cached by then).
            client = await self.record_client(record)
            await client.set_push_config(params)
        except (PeerError, DelegationError):
            return False
        return True

    async def refresh(self, local_id: str) -> Delegation:
        record = await self.get(local_id)
        task = await (await self.record_client(record)).get_task(record.remote_task_id)
        return await self.store.update(record.id, task)

    async def cancel(self, local_id: str) -> Delegation:
        record = await self.get(local_id)
        task = await (await self.record_client(record)).cancel_task(record.remote_task_id)
        return await self.store.update(record.id, task)

    async def follow(
        self,
        local_id: str,
        timeout: float,
        on_update: Callable[[Delegation], None] = lambda _: None,
        *,
        first_delay: float = 0.1,
        max_delay: float = 2.0,
        pushed: bool = False,
        on_trouble: Callable[[], None] = lambda: None,
    ) -> Delegation:
        """Poll until final or needing input; raises DelegationError on timeout. When the
        peer pushes to this node (`pushed`), the local record, which each verified push
        updates, is read instead, and the peer polled only every PUSHED_POLL seconds.
        `on_update` has the record at the start and whenever its task changed (its state, a
        progress message, an artifact); `on_trouble` hears of a poll that failed."""
        deadline = time.monotonic() + timeout
        record = await self.get(local_id)
        delay = first_delay
        seen = record.task
        last_poll = time.monotonic()
        on_update(record)
        while record.state not in SETTLED:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DelegationError(
                    f"task {local_id} still {state_v03(record.state)} after {timeout:g}s; "
                    "it goes on at the peer"
                )
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, PUSHED_READ if pushed else max_delay)
            if pushed and time.monotonic() - last_poll < PUSHED_POLL:
                record = await self.get(local_id)
                if record.task != seen:
                    seen = record.task
                    on_update(record)
                continue
            last_poll = time.monotonic()
            try:
                record = await self.refresh(local_id)
            except PeerMisconfigured as exc:  # the record must change first
                raise DelegationError(str(exc)) from None
            except PeerError as exc:  # the peer may be restarting: keep following
                on_trouble()
                if time.monotonic() >= deadline:
                    raise DelegationError(str(exc)) from None
                continue
            if record.task != seen:
                seen = record.task
                on_update(record)
        return record
