"""A node's runtime: its config, stores and services, built once at start-up."""

from __future__ import annotations

import ipaddress
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synthorg.admin.audit import AuditLog
from synthorg.admin.guard import AdminTokenGuardedGate
from synthorg.admin.service import AdminService, PeersAdmin, SettingsAdmin
from synthorg.admin.token import AdminToken
from synthorg.cards.discovery import CardDiscovery
from synthorg.cards.publisher import CardPublisher
from synthorg.config.company import ConfigError, NodeConfig, load_config
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.peer_executor import PeerExecutor
from synthorg.gateway.auth import PeerGate
from synthorg.generated.models import AgentConfig
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.log import emit
from synthorg.settings.runtime import RuntimeSettings
from synthorg.settings.store import SqliteSettingsStore
from synthorg.skills import SkillDirectory
from synthorg.store.catalog import SqliteCatalog
from synthorg.store.db import open_database
from synthorg.store.delegations import SqliteDelegationStore
from synthorg.store.secretbox import SecretBox
from synthorg.store.tasks import SqliteTaskStore
from synthorg.tasks.executors import EchoExecutor, Executor, ParkExecutor
from synthorg.tasks.service import AgentRuntime, TaskService, now_iso


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
    db: sqlite3.Connection
    catalog: SqliteCatalog
    task_store: SqliteTaskStore
    tasks: TaskService
    skills: SkillDirectory
    gate: PeerGate
    cards: CardPublisher  # this node's own cards
    discovery: CardDiscovery  # its peers' cards
    agent_ids: frozenset[str]
    settings: RuntimeSettings
    delegator: Delegator
    admin_token: AdminToken  # the operator's; only its digest is held
    admin: AdminService  # what the admin API does (settings, peers), audited

    # GatewaySettings, read by the transport middleware on every request.
    @property
    def enabled(self) -> bool:
        return self.config.a2a.enabled

    @property
    def max_request_body_bytes(self) -> int:
        return self.config.a2a.max_request_body_bytes

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
        db = open_database(data_dir)
        catalog = SqliteCatalog(db, SecretBox.for_data_dir(data_dir))
        task_store = SqliteTaskStore(db)
        gate_catalog: Any = catalog
        if config.a2a.dev_allow_without_catalog:
            if not is_loopback(host):
                raise ConfigError(
                    f"{config.source or data_dir / 'config.yaml'}: a2a.dev_allow_without_catalog: "
                    f"only allowed on a loopback address, not {host}"
                )
            gate_catalog = None
            emit(
                events.NODE_FAIL_OPEN,
                level="warning",
                host=host,
                reason="a2a.dev_allow_without_catalog: the allowlist is the only gate; "
                "development only, never expose this node",
            )
        settings = RuntimeSettings(SqliteSettingsStore(db), config.a2a)
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
        skills = SkillDirectory(config.agents, discovery)
        # The admin token is never accepted as a peer credential, whatever the catalog holds.
        gate = AdminTokenGuardedGate(config.allowed_peers, gate_catalog, admin_token)
        admin = AdminService(
            SettingsAdmin(settings, config.a2a, audit), PeersAdmin(catalog, audit, [admin_token])
        )
        return cls(
            data_dir,
            config,
            db,
            catalog,
            task_store,
            tasks,
            skills,
            gate,
            cards=CardPublisher(config),
            discovery=discovery,
            agent_ids=frozenset(agent.id for agent in config.agents),
            settings=settings,
            delegator=delegator,
            admin_token=admin_token,
            admin=admin,
        )

    def warn_about_admin_token_reuse(self) -> None:
        """A catalog secret equal to the admin token (possible when the token comes from the
        environment) is never accepted by the gate; say so, once, at start-up."""
        try:
            records = self.catalog.list()
        except Exception:
            return  # an undecryptable secret is reported where it is used
        for record in records:
            if self.admin_token.matches_text(record.secret):
                emit(
                    admin_events.PEER_SECRET_IS_ADMIN_TOKEN,
                    level="warning",
                    peer_name=record.name,
                    reason="this peer's stored secret is the admin token, which the peer gate "
                    "never accepts: give the peer a secret of its own",
                )

    async def startup(self) -> None:
        self.warn_about_admin_token_reuse()
        recovered = await self.task_store.recover(now_iso())
        if recovered:
            emit(
                events.TASK_RECOVERED,
                count=recovered,
                reason="tasks left unfinished by a previous run were marked failed",
            )

    def close(self) -> None:
        self.db.close()
