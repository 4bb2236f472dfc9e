"""A node's runtime: its config, stores and services, built once per process.

This is the one place that knows every concrete class. Everything else sees interfaces: the
gateway sees the gates and the services, handlers see their typed contexts, services see
store interfaces.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from synthorg.admin.api import AdminApi
from synthorg.admin.audit import AuditLog
from synthorg.admin.service import AdminService, PeersAdmin, SettingsAdmin
from synthorg.admin.token import AdminToken
from synthorg.cards.discovery import CardDiscovery
from synthorg.cards.publisher import CardPublisher
from synthorg.config.company import ConfigError, NodeConfig, load_config
from synthorg.contract.spec import bundled_openapi
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.peer_executor import PeerExecutor
from synthorg.gateway.context import Services
from synthorg.gateway.endpoint import Gateway, GatewayConfig
from synthorg.gateway.gates import PeerGate
from synthorg.generated.models import AgentConfig
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.log import emit
from synthorg.settings.runtime import RuntimeSettings
from synthorg.skills import SkillDirectory
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import Database, open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from synthorg.store.sqlite.revisions import Revisions, request_scope
from synthorg.store.sqlite.settings import SqliteSettingsStore
from synthorg.store.sqlite.tasks import SqliteTaskStore
from synthorg.tasks.executors import EchoExecutor, Executor, ParkExecutor
from synthorg.tasks.service import AgentRuntime, TaskService, now_iso
from synthorg.web.app import NodeApp
from synthorg.web.endpoints import operation_endpoints


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _executor(agent: AgentConfig, delegator: Delegator, node_name: str | None) -> Executor:
    executor = agent.executor
    if executor is None or executor.kind == "echo":
        return EchoExecutor()
    if executor.kind == "park":
        return ParkExecutor()
    assert executor.peer is not None  # the config loader requires it for kind peer
    return PeerExecutor(delegator, node_name, executor.peer, executor.agent)


@dataclass
class Node:
    data_dir: Path
    config: NodeConfig
    db: Database
    catalog: SqliteCatalog
    task_store: SqliteTaskStore
    tasks: TaskService
    skills: SkillDirectory
    gate: PeerGate
    cards: CardPublisher  # this node's own cards
    discovery: CardDiscovery  # its peers' cards
    settings: RuntimeSettings
    delegator: Delegator
    admin_token: AdminToken  # the operator's; only its digest is held
    admin: AdminService  # what the admin API and the CLI do (settings, peers), audited

    @property
    def enabled(self) -> bool:
        return self.config.a2a.enabled

    @classmethod
    def build(cls, data_dir: Path, host: str = "127.0.0.1") -> Node:
        config = load_config(data_dir)
        admin_token = AdminToken.load(data_dir)  # before the store: a bad token stops the start
        audit = AuditLog(data_dir)
        try:
            audit.prepare()
        except OSError as exc:
            raise ConfigError(f"{audit.path}: cannot write the audit log ({exc.strerror})"
                              ) from None
        fail_open = config.a2a.dev_allow_without_catalog
        if fail_open and not is_loopback(host):
            raise ConfigError(
                f"{config.source or data_dir / 'config.yaml'}: a2a.dev_allow_without_catalog: "
                f"only allowed on a loopback address, not {host}"
            )
        db = open_database(data_dir)
        try:
            return cls._assemble(data_dir, config, db, admin_token, audit)
        except BaseException:
            db.close()
            raise

    @classmethod
    def _assemble(
        cls, data_dir: Path, config: NodeConfig, db: Database, admin_token: AdminToken,
        audit: AuditLog,
    ) -> Node:
        revisions = Revisions(db)
        catalog = SqliteCatalog(db, SecretBox.for_data_dir(data_dir), revisions)
        task_store = SqliteTaskStore(db)
        settings = RuntimeSettings(SqliteSettingsStore(db, revisions), config.a2a)
        node_name = config.a2a.node_name
        # Read through callables, so a runtime settings write applies to the next use.
        delegator = Delegator(
            catalog, SqliteDelegationStore(db), node_name, lambda: settings.client_timeout_seconds
        )
        agents = {
            a.id: AgentRuntime(a.id, _executor(a, delegator, node_name)) for a in config.agents
        }
        tasks = TaskService(
            task_store,
            agents,
            config.default_agent,
            lambda: settings.max_message_parts,
            node_name=node_name,
        )
        discovery = CardDiscovery(
            catalog.addresses(),
            lambda: settings.client_timeout_seconds,
            lambda: settings.card_cache_max_entries,
        )
        settings.on_change(
            lambda key, value: (
                discovery.resize(int(value)) if key == "card_cache_max_entries" else None
            )
        )
        gate_catalog = None if config.a2a.dev_allow_without_catalog else catalog
        return cls(
            data_dir,
            config,
            db,
            catalog,
            task_store,
            tasks,
            SkillDirectory(config.agents, discovery),
            PeerGate(config.allowed_peers, gate_catalog, admin_token),
            cards=CardPublisher(config),
            discovery=discovery,
            settings=settings,
            delegator=delegator,
            admin_token=admin_token,
            admin=AdminService(
                SettingsAdmin(settings, config.a2a, audit),
                PeersAdmin(catalog, audit, [admin_token]),
            ),
        )

    def app(self) -> NodeApp:
        """The ASGI app serving this node."""
        gateway = Gateway(
            GatewayConfig(
                enabled=self.enabled,
                max_request_body_bytes=self.config.a2a.max_request_body_bytes,
                gate=self.gate,
                agent_ids=frozenset(agent.id for agent in self.config.agents),
                services=Services(self.tasks, self.skills),
                request_started=request_scope,
            )
        )
        admin = AdminApi(self.admin, self.settings, self.discovery, self.enabled)
        operations = operation_endpoints(self.cards, admin)
        return NodeApp(gateway, operations, self.admin_token, bundled_openapi())

    def warn_at_start(self, host: str) -> None:
        """Say once, at start-up, what an operator must know about this node's setup."""
        if self.config.a2a.dev_allow_without_catalog:
            emit(
                events.NODE_FAIL_OPEN,
                level="warning",
                host=host,
                reason="a2a.dev_allow_without_catalog: the allowlist is the only gate; "
                "development only, never expose this node",
            )
        try:
            records = self.catalog.list()
        except Exception:
            return  # an undecryptable secret is reported where it is used
        for record in records:
            # The gate never accepts the admin token as a peer credential.
            if self.admin_token.matches_text(record.secret):
                emit(
                    admin_events.PEER_SECRET_IS_ADMIN_TOKEN,
                    level="warning",
                    peer_name=record.name,
                    reason="this peer's stored secret is the admin token, which the peer gate "
                    "never accepts: give the peer a secret of its own",
                )

    async def recover(self) -> None:
        """Fail the tasks a previous run left unfinished, before anyone can ask about them."""
        recovered = await self.task_store.recover(now_iso())
        if recovered:
            emit(
                events.TASK_RECOVERED,
                count=recovered,
                reason="tasks left unfinished by a previous run were marked failed",
            )

    def close(self) -> None:
        self.db.close()
