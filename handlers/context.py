"""What a JSON-RPC handler may use besides its params: the caller and the node's services.

Handlers (and the 0.3 edge, `synthorg/dialects/v03/`) see only this interface and the
generated models, never the runtime that implements it, so the arrows run one way: the
gateway calls handlers, handlers call services.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from synthorg.admin.task_query import TaskListQuery as TaskListQuery
from synthorg.generated.models import (
    AgentCard,
    PushNotificationConfig,
    SkillsNegotiateResult,
    SkillsQueryResult,
    StreamEvent,
    TaskPushNotificationConfig,
    V1AgentCard,
    V1Message,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1StreamResponse,
    V1Task,
)
from synthorg.sequenced import Sequenced as Sequenced  # what streaming handlers yield
from synthorg.tasks.query import TaskPage as TaskPage
from synthorg.tasks.query import TaskQuery as TaskQuery

RequestId = str | int | None


class TaskOperations(Protocol):
    """The caller's tasks, as A2A 1.0 objects; another peer's task is indistinguishable from
    a missing one."""

    async def send(
        self, peer: str, params: V1SendMessageParams | V1SendStreamingMessageParams,
        agent_id: str | None,
    ) -> V1Task | V1Message:
        """The task the message created or continued, or the agent's direct reply (a
        Message: no task is kept). The configuration's push config is the caller's to
        register (`handlers.rules.send`)."""
        ...

    async def get(self, peer: str, task_id: str, history_length: int | None) -> V1Task: ...

    async def cancel(self, peer: str, task_id: str) -> V1Task: ...

    async def list(self, peer: str, query: TaskQuery) -> TaskPage:
        """The caller's own tasks; InvalidParams for a page token this node did not issue."""
        ...

    def stream(
        self, peer: str, params: V1SendMessageParams | V1SendStreamingMessageParams,
        agent_id: str | None,
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        """Start or continue a task as send does, then follow it to its final event."""
        ...

    def resubscribe(
        self, peer: str, task_id: str, after: int | None
    ) -> AsyncIterator[Sequenced[V1StreamResponse]]:
        """Follow the caller's task: the events after sequence number `after` (None: the task
        as it is now), then live, to its final event."""
        ...


class PushConfigOperations(Protocol):
    """The push notification configs of the caller's tasks (another peer's: not found)."""

    async def check(self, peer: str, config: PushNotificationConfig) -> None:
        """InvalidParams unless the node would push to this config (url, authentication) of
        a task `peer` owns."""
        ...

    async def set(
        self, peer: str, task_id: str, config: PushNotificationConfig
    ) -> TaskPushNotificationConfig: ...

    async def get(
        self, peer: str, task_id: str, config_id: str | None
    ) -> TaskPushNotificationConfig: ...

    async def list(self, peer: str, task_id: str) -> list[TaskPushNotificationConfig]: ...

    async def delete(self, peer: str, task_id: str, config_id: str) -> None: ...


class SkillOperations(Protocol):
    """Which agents and peers offer a skill."""

    async def query(self, skill: str) -> SkillsQueryResult: ...

    async def negotiate(self, skill: str, peer_name: str) -> SkillsNegotiateResult: ...


class RpcContext(Protocol):
    """One admitted call: who is calling, on which endpoint, and the services it may use."""

    @property
    def peer(self) -> str:
        """The caller's canonical peer name, admitted by the gates."""
        ...

    @property
    def request_id(self) -> RequestId: ...

    @property
    def agent_id(self) -> str | None:
        """Set when the call came in on an agent's own endpoint."""
        ...

    @property
    def last_event_id(self) -> str | None:
        """The Last-Event-ID header of a request that resumes a stream."""
        ...

    @property
    def tasks(self) -> TaskOperations: ...

    @property
    def skills(self) -> SkillOperations: ...

    def extended_card(self) -> AgentCard:
        """This node's extended card (the agent's, on an agent's endpoint): the public card
        and the skills only admitted peers see."""
        ...

    def extended_card_v1(self) -> V1AgentCard:
        """The extended card's 1.0-only document (signed as that document)."""
        ...

    @property
    def push(self) -> PushConfigOperations: ...


# -- the HTTP operations (cards, admin) ------------------------------------------------------


class HttpRequest(Protocol):
    """What a card or admin operation may read of its request."""

    @property
    def path_params(self) -> Mapping[str, str]: ...

    @property
    def body(self) -> bytes:
        """The body the admin gate buffered (empty for methods that take none)."""
        ...

    @property
    def client(self) -> str | None:
        """The caller's address, for the audit trail."""
        ...

    @property
    def local_base_url(self) -> str:
        """`scheme://host:port` of the socket that took the request (never the Host header)."""
        ...

    def header_values(self, name: str) -> list[str]:
        """Every value of a header (its name in any case), in order."""
        ...

    @property
    def client_certificate(self) -> bytes | None:
        """The client certificate (DER) the connection's TLS handshake verified, else None."""
        ...

    @property
    def query(self) -> Mapping[str, list[str]]:
        """The query string's parameters, each with every value it was given, in order."""
        ...


class CardDocument(Protocol):
    """A card rendered once: its canonical bytes and the strong ETag hashed from them."""

    @property
    def body(self) -> bytes: ...

    @property
    def etag(self) -> str: ...


class CardsContext(Protocol):
    """This node's own cards, built from its config."""

    @property
    def enabled(self) -> bool: ...

    @property
    def cache_control(self) -> str: ...

    def jwks(self) -> CardDocument | None:
        """The JWKS of the card-signing keys; None when cards are not signed."""
        ...

    def company(self, request: HttpRequest, version: str | None = None) -> CardDocument:
        """`version` (an A2A version): its document, else the combined 0.3 + 1.0 one."""
        ...

    def agent(
        self, agent_id: str, request: HttpRequest, version: str | None = None
    ) -> CardDocument | None:
        """None when no agent has this id."""
        ...


class PushReceiverContext(Protocol):
    """Verifies a signed push from a federation member and applies it."""

    async def receive(
        self, peer: str, body: bytes, timestamp: str | None, signature: str | None,
        delivery_id: str | None, authorization: str | None = None, token: str | None = None,
        client_cert: bytes | None = None,
    ) -> int:
        """204 accepted, 400 not a Task, 401 unverifiable, 409 replayed (the headers: None
        when absent; a repeated one is unverifiable). `client_cert`: the DER certificate the
        connection's TLS handshake verified (an mtls peer's credential)."""
        ...


class HealthContext(Protocol):
    """What the readiness probe asks of the node."""

    async def ready(self) -> bool:
        """The store answers, at the schema version this release knows."""
        ...


JsonDocument = dict[str, Any]


class AdminContext(Protocol):
    """The operator's operations on settings and peers, validated, written and audited.

    Refusals are `synthorg.errors` (InvalidValue, UnknownSetting, UnknownPeer, PeerExists);
    documents are the spec's admin.json shapes (SettingView, AdminPeer, AdminStatus)."""

    def list_settings(self) -> list[JsonDocument]: ...

    def get_setting(self, name: str) -> JsonDocument: ...

    def require_setting(self, name: str) -> str:
        """The setting's range in words; UnknownSetting when there is no such setting."""
        ...

    def set_setting(self, name: str, value: float | int, client: str | None) -> JsonDocument: ...

    def reset_setting(self, name: str, client: str | None) -> JsonDocument: ...

    def list_peers(self) -> list[JsonDocument]: ...

    def get_peer(self, name: str) -> JsonDocument: ...

    def require_peer(self, name: str) -> None:
        """UnknownPeer unless a record by this canonical name exists."""
        ...

    def create_peer(
        self, name: str, endpoint: str, scheme: str, secret: str, client: str | None
    ) -> JsonDocument: ...

    def replace_peer(
        self, name: str, endpoint: str, scheme: str, secret: str, client: str | None
    ) -> JsonDocument: ...

    def set_peer_rate_limit(
        self, name: str, per_second: float | None, client: str | None
    ) -> JsonDocument:
        """Set (None: clear) the peer's own rate limit; the AdminPeer as stored."""
        ...

    def set_peer_card_key(
        self, name: str, card_key: str | None, client: str | None
    ) -> JsonDocument:
        """Pin (None: unpin) the key that must sign the peer's cards; the AdminPeer."""
        ...

    def set_peer_binding(
        self, name: str, binding: str | None, client: str | None
    ) -> JsonDocument:
        """Set (None: clear) the binding delegations to the peer are sent in; the AdminPeer."""
        ...

    def delete_peer(self, name: str, client: str | None) -> None: ...

    async def list_tasks(self, query: TaskListQuery) -> JsonDocument:
        """An AdminTaskList; InvalidValue for a page past the scan bound."""
        ...

    async def get_task(self, task_id: str, peer: str | None) -> JsonDocument:
        """An AdminTaskDetail; UnknownTask when no known peer has the task."""
        ...

    async def cancel_task(self, task_id: str, peer: str | None) -> JsonDocument:
        """The canceled Task; UnknownTask, or NotCancelable for a final task."""
        ...

    async def follow_task(self, task_id: str, peer: str | None
                          ) -> AsyncIterator[Sequenced[StreamEvent]]:
        """The task now, then each event to the final one; UnknownTask before any."""
        ...

    def list_audit(self, event: str | None, via: str | None, peer: str | None,
                   key: str | None, since: str | None, limit: int) -> JsonDocument:
        """An AuditList, newest first."""
        ...

    async def peer_activity(self, name: str) -> JsonDocument:
        """A PeerActivity; UnknownPeer when there is no such record."""
        ...

    def metrics_samples(self) -> JsonDocument:
        """A MetricsSamples document (this process's)."""
        ...

    async def status(self) -> JsonDocument:
        """The AdminStatus document; StoreError when the store cannot be reached."""
        ...


class MetricsContext(Protocol):
    """The node's metrics, for GET /metrics (the endpoint has already checked the caller)."""

    async def render(self) -> bytes | None:
        """The Prometheus text format; None when metrics are off."""
        ...
