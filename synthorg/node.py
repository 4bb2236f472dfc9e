"""A node's runtime: its config, stores and services, built once per process.

This is the one place that knows every concrete class. Everything else sees interfaces: the
gateway sees the gates and the services, handlers see their typed contexts, services see
store interfaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from synthorg.admin.activity import ActivityView
from synthorg.admin.api import AdminApi
from synthorg.admin.audit import AuditLog
from synthorg.admin.service import AdminService, PeersAdmin, SettingsAdmin
from synthorg.admin.status import NodeStatus
from synthorg.admin.tasks import AdminTasks
from synthorg.admin.token import AdminToken
from synthorg.cards.discovery import CardDiscovery
from synthorg.cards.fetch import fetch_card_document
from synthorg.cards.keys import CardKeySet
from synthorg.cards.publisher import CardPublisher
from synthorg.config.company import ConfigError, NodeConfig, load_config
from synthorg.console.admin_calls import AdminCalls
from synthorg.console.app import Console
from synthorg.console.pages import build_console
from synthorg.contract.spec import bundled_openapi
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.peer_executor import PeerExecutor
from synthorg.errors import StoreError
from synthorg.gateway.admission import AdmissionWatch
from synthorg.gateway.context import Services
from synthorg.gateway.credential_index import CredentialIndex
from synthorg.gateway.endpoint import Gateway, GatewayConfig
from synthorg.gateway.gates import PeerGate
from synthorg.gateway.ratelimit import WORKERS_ENV, PeerRateLimiter, process_share
from synthorg.generated.constants import Operation
from synthorg.generated.models import AgentConfig
from synthorg.observability import tracing
from synthorg.observability.access import Observed, Observer
from synthorg.observability.activity import Activity
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.log import emit
from synthorg.observability.metrics import Metrics, MetricsRoute, TimedStore
from synthorg.observability.outbound import set_metrics as set_outbound_metrics
from synthorg.observability.tracing import Tracing
from synthorg.push import housekeeping as push_housekeeping
from synthorg.push.configs import PushConfigs
from synthorg.push.delivery import CLAIM_LEASE, Deliverer
from synthorg.push.receiver import PushReceiver, ReceiverContext
from synthorg.push.sealing import SealedConfigs, Sealer
from synthorg.push.ssrf import TargetGuard
from synthorg.settings.runtime import RuntimeSettings
from synthorg.skills import SkillDirectory
from synthorg.store.backend import Stores
from synthorg.store.catalog import Catalog
from synthorg.store.select import open_stores, runner_from_env
from synthorg.store.tasks import StoredTask, TaskStore
from synthorg.tasks.executors import (
    ConformanceExecutor,
    EchoExecutor,
    Executor,
    ParkExecutor,
)
from synthorg.tasks.plugins import PluginError, add_import_roots, load_executor
from synthorg.tasks.service import AgentRuntime, TaskService, now_iso
from synthorg.tasks.streams import TaskStreams
from synthorg.tls.context import client_context, grpc_client_credentials, tls_files
from synthorg.tls.context import problems as problems_of_tls
from synthorg.web.app import NodeApp
from synthorg.web.endpoints import operation_endpoints
from synthorg.web.router import Endpoint

if TYPE_CHECKING:
    from synthorg.grpc.server import GrpcListener


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _executor(
    agent: AgentConfig, delegator: Delegator, node_name: str | None, public_url: str | None
) -> Executor:
    executor = agent.executor
    if executor is None:
        return EchoExecutor()
    if executor.kind == "echo":
        return EchoExecutor.from_options(executor.options)
    if executor.kind == "park":
        return ParkExecutor()
    if executor.kind == "conformance":
        return ConformanceExecutor()
    if executor.kind == "python":
        assert executor.entrypoint is not None  # the config loader requires it for kind python
        try:
            return load_executor(agent.id, executor.entrypoint, executor.options)
        except PluginError as exc:
            raise ConfigError(str(exc)) from None
    assert executor.peer is not None  # the config loader requires it for kind peer
    return PeerExecutor(delegator, node_name, executor.peer, executor.agent, public_url)


def _config_dir(setup: NodeSetup) -> Path:
    return _dir_of(setup.config, setup.data_dir)


def _dir_of(config: NodeConfig, data_dir: Path) -> Path:
    """Where relative paths in the config are read from: the config file's directory."""
    return config.source.parent if config.source is not None else data_dir


def outbound_tls(setup: NodeSetup) -> ssl.SSLContext | None:
    """What calls to peers verify with and present (`server.tls`); None: the defaults."""
    return client_context(tls_files(setup.config.server.tls, _config_dir(setup)))


class Health:
    """What /readyz asks (`handlers.context.HealthContext`): does the store answer, with the
    schema this release knows?"""

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    async def ready(self) -> bool:
        return await self._stores.ready()


@dataclass(frozen=True)
class NodeSetup:
    """What a node reads before it touches its store: the config, the admin token and the
    keys that sign its cards."""

    data_dir: Path
    config: NodeConfig
    admin_token: AdminToken
    card_keys: CardKeySet | None = None


def prepare(data_dir: Path, host: str = "127.0.0.1") -> NodeSetup:
    """Read the config and the admin token, and check what needs no store; ConfigError (or
    the token's own error) stops the start."""
    config = load_config(data_dir)
    admin_token = AdminToken.load(data_dir)
    if config.a2a.dev_allow_without_catalog and not is_loopback(host):
        raise ConfigError(
            f"{config.source or data_dir / 'config.yaml'}: a2a.dev_allow_without_catalog: "
            f"only allowed on a loopback address, not {host}"
        )
    files = tls_files(config.server.tls, _dir_of(config, data_dir))
    for key, problem in problems_of_tls(files) if files is not None else []:
        raise ConfigError(f"{config.source or data_dir / 'config.yaml'}: server.tls.{key}: "
                          f"{problem}")
    card_keys = CardKeySet.load(data_dir) if config.a2a.enabled else None
    return NodeSetup(data_dir, config, admin_token, card_keys)


@dataclass
class Node:
    data_dir: Path
    config: NodeConfig
    stores: Stores
    tasks: TaskService
    skills: SkillDirectory
    gate: PeerGate
    cards: CardPublisher  # this node's own cards
    discovery: CardDiscovery  # its peers' cards
    settings: RuntimeSettings
    delegator: Delegator
    admin_token: AdminToken  # the operator's; only its digest is held
    admin: AdminService  # what the admin API and the CLI do (settings, peers), audited
    push: PushConfigs  # the push notification configs of callers' tasks
    deliverer: Deliverer  # sends the pushes those configs ask for
    _background: asyncio.Task[None] | None = field(default=None, repr=False)
    _delivering: asyncio.Task[None] | None = field(default=None, repr=False)
    # Tasks taken over from runners that are gone, to resume once the node's loop runs.
    _adopted: list[tuple[str, StoredTask]] = field(default_factory=list, repr=False)
    metrics: Metrics | None = None  # None: observability.metrics is false
    traced: bool = False  # OTEL_EXPORTER_OTLP_ENDPOINT is set
    # This process's recent traffic, for the console (always on: one addition per request).
    activity: Activity = field(default_factory=Activity)

    @property
    def enabled(self) -> bool:
        return self.config.a2a.enabled

    @property
    def catalog(self) -> Catalog:
        return self.stores.catalog

    @property
    def task_store(self) -> TaskStore:
        return self.stores.tasks

    @classmethod
    def build(cls, data_dir: Path, host: str = "127.0.0.1", stores: Stores | None = None,
              setup: NodeSetup | None = None) -> Node:
        """The node on `stores` (by default, those `synthorg.store.select` picks, opened and
        migrated now)."""
        setup = setup or prepare(data_dir, host)
        if stores is None:
            stores = open_stores(data_dir, runner_from_env())
        try:
            return cls._assemble(setup, stores)
        except BaseException:
            stores.close()
            raise

    @classmethod
    def _assemble(cls, setup: NodeSetup, stores: Stores) -> Node:
        config, admin_token = setup.config, setup.admin_token
        catalog = stores.catalog
        settings = RuntimeSettings(stores.settings, config.a2a)
        audit = AuditLog(stores.audit)
        node_name = config.a2a.node_name
        # Read through callables, so a runtime settings write applies to the next use.
        tls = outbound_tls(setup)
        delegator = Delegator(
            catalog, stores.delegations, node_name, lambda: settings.client_timeout_seconds,
            tls=tls,
            grpc_tls=grpc_client_credentials(tls_files(config.server.tls, _config_dir(setup))),
        )
        if any(a.executor is not None and a.executor.kind == "python" for a in config.agents):
            add_import_roots(config.python_path, _config_dir(setup))
        agents = {
            a.id: AgentRuntime(a.id, _executor(a, delegator, node_name, config.a2a.public_url))
            for a in config.agents
        }
        metrics, traced = _observability(config, stores)
        streams = TaskStreams(stores.tasks)
        tasks = TaskService(
            _instrumented(stores.tasks, metrics, traced),
            agents,
            config.default_agent,
            lambda: settings.max_message_parts,
            node_name=node_name,
            streams=streams,
        )
        guard = TargetGuard(
            catalog.addresses(), lambda: config.a2a.push_allow_private_networks, node_name
        )
        sealer = Sealer(stores.box)  # push config secrets are kept encrypted
        push_configs = SealedConfigs(stores.push_configs, sealer)
        deliverer = Deliverer(
            stores.tasks, push_configs, stores.push_outbox, guard, catalog, node_name,
            lambda: settings.client_timeout_seconds, sealer.open,
            on_result=metrics.push_result if metrics is not None else None, tls=tls,
        )
        streams.on_write(deliverer.task_written)
        discovery = CardDiscovery(
            catalog.addresses(),
            lambda: settings.client_timeout_seconds,
            lambda: settings.card_cache_max_entries,
            fetch=partial(fetch_card_document, tls=tls),
        )
        settings.on_change(
            lambda key, value: (
                discovery.resize(int(value)) if key == "card_cache_max_entries" else None
            )
        )
        gate_catalog = None if config.a2a.dev_allow_without_catalog else catalog
        return cls(
            setup.data_dir,
            config,
            stores,
            tasks,
            SkillDirectory(config.agents, discovery),
            PeerGate(config.allowed_peers, gate_catalog, admin_token,
                     None if gate_catalog is None else CredentialIndex(gate_catalog)),
            cards=CardPublisher(config, keys=setup.card_keys),
            discovery=discovery,
            settings=settings,
            delegator=delegator,
            admin_token=admin_token,
            admin=AdminService(
                SettingsAdmin(settings, audit),
                PeersAdmin(catalog, audit, [admin_token]),
            ),
            push=PushConfigs(stores.tasks, push_configs, guard, deliverer.enqueue),
            deliverer=deliverer,
            metrics=metrics,
            traced=traced,
        )

    def app(self, listen: tuple[str, int] | None = None) -> NodeApp:
        """The ASGI app serving this node. `listen`: the HTTP listener's (host, port); with
        it, and `server.grpc_port` set, the app's lifespan runs the gRPC listener too."""
        gateway_config = GatewayConfig(
            enabled=self.enabled,
            max_request_body_bytes=self.config.a2a.max_request_body_bytes,
            gate=self.gate,
            agent_ids=frozenset(agent.id for agent in self.config.agents),
            services=Services(self.tasks, self.skills, self.push, self.cards),
            request_started=self.stores.request_started,
            limiter=self._rate_limiter(),
            admission=AdmissionWatch(self.gate, self.stores.request_started),
        )
        gateway = Gateway(gateway_config)
        observers: list[Observer] = [self.activity]
        if self.metrics is not None:
            observers.append(self.metrics)
        if self.traced:
            observers.append(Tracing())
        listener = self._grpc(gateway_config, listen, tuple(observers))
        activity = ActivityView(self.admin, self.discovery, self.activity, self.stores.tasks,
                                self.stores.delegations)
        tasks = AdminTasks(self.tasks, self.stores.tasks, self.stores.delegations,
                           self._task_owners)
        admin = AdminApi(self.admin, self.settings, self.discovery, self.enabled, activity,
                         NodeStatus(self.stores, self.config.allowed_peers, _workers()),
                         tasks, self.stores.audit)
        receiver = PushReceiver(
            self.catalog, self.stores.push_receipts, self.stores.delegations,
            lambda: self.settings.push_verification_clock_skew_seconds,
        )
        route = MetricsRoute(self.metrics, self.config.observability.metrics_public,
                             self.admin_token.matches_authorization)
        operations = operation_endpoints(self.cards, admin, Health(self.stores),
                                         ReceiverContext(receiver), (route, route.admits))
        app = NodeApp(gateway, operations, self.admin_token, bundled_openapi(),
                      max_push_body=self.config.a2a.max_request_body_bytes,
                      on_start=self.start_background if listener is None else listener.started(
                          self.start_background),
                      on_stop=self.stop_background if listener is None else listener.stopped(
                          self.stop_background),
                      console=self._console(operations))
        return app.observed(lambda inner: Observed(inner, observers))

    def _grpc(self, config: GatewayConfig, listen: tuple[str, int] | None,
              observers: tuple[Observer, ...]) -> GrpcListener | None:
        """The gRPC listener on `server.grpc_port`, beside the HTTP one at `listen`."""
        port = self.config.server.grpc_port
        if port is None or listen is None or not self.enabled:
            return None
        from synthorg.grpc.server import GrpcListener  # grpc is loaded only when it serves

        host, http_port = listen
        tls = tls_files(self.config.server.tls, _dir_of(self.config, self.data_dir))
        scope = {"scheme": "https" if tls is not None else "http", "server": (host, http_port)}
        return GrpcListener(config, host, port, tls, scope, shared_port=_workers() > 1,
                            max_metadata_bytes=self.config.server.max_header_bytes,
                            observers=observers)

    def _task_owners(self) -> list[str]:
        """Every peer that may own an inbound task: the catalog's and the allowlisted."""
        return sorted({r.name for r in self.catalog.list()} | set(self.config.allowed_peers))

    def _console(self, operations: Mapping[Operation, Endpoint | str]) -> Console | None:
        """The operator console over the admin operations, unless config turns it off."""
        config = self.config.console
        if not config.enabled:
            return None
        calls = AdminCalls({op: ep for op, ep in operations.items() if not isinstance(ep, str)})
        return build_console(calls, self.admin_token, self.stores.console_sessions,
                             config.session_minutes)

    def _rate_limiter(self) -> PeerRateLimiter:
        settings = self.settings
        share = process_share()
        # Several processes serve these peers (workers, or replicas of a shared store): the
        # buckets are shared, taken in leases. A lone process keeps them in memory.
        shared = self.stores.rate_buckets.take if share > 1 or self.stores.shared else None
        return PeerRateLimiter(
            lambda: settings.peer_rate_limit_per_second,
            lambda: settings.peer_rate_limit_burst,
            share,
            shared=shared,
        )

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

    async def recover(self, *, others_gone: bool = False) -> int:
        """Fail the unfinished tasks whose runner is gone (with `others_gone`: every runner
        but this one, as when the only server of a store starts); returns the count. Those
        whose agent can go on with them (a forwarded task still running at the peer) are
        taken over instead, and resumed once the node serves (`resume_adopted`)."""
        if not others_gone:
            # This runner holds its lease before it takes anything over: a task adopted by a
            # runner with none would look left behind to another replica's sweep, which would
            # take it over (and resume it) too. (With `others_gone` no other runner sweeps:
            # a store's only server, or a supervisor adopting for the workers it starts.)
            await self.task_store.heartbeat()
        self._adopted.extend(
            await self.task_store.adopt(self.tasks.resumable, others_gone=others_gone)
        )
        recovered = await self.task_store.recover(now_iso(), others_gone=others_gone)
        if others_gone:  # every push claim is a dead sender's: due now, not when it runs out
            await self.stores.push_outbox.release(time.time(), CLAIM_LEASE)
        if recovered:
            emit(
                events.TASK_RECOVERED,
                count=recovered,
                reason="tasks left unfinished by a runner that is gone (a previous run, or a "
                "replica that stopped) were marked failed",
            )
        return recovered

    async def resume_adopted(self) -> None:
        """Go on with the tasks `recover` took over, on the loop that serves. Each on its own:
        one that cannot go on (it moved on meanwhile: canceled elsewhere, say) is reported
        and the others still resume; nothing of it reaches the caller (the start-up, the
        maintenance loop with its heartbeats)."""
        adopted, self._adopted = self._adopted, []
        for peer, stored in adopted:
            try:
                await self.tasks.resume(peer, stored)
            except Exception as exc:
                if isinstance(exc, StoreError):  # this runner holds it: the next sweep retries
                    self._adopted.append((peer, stored))
                emit(events.TASK_RESUME_FAILED, level="warning", peer_name=peer,
                     task_id=stored.task.id, error=type(exc).__name__)

    async def start_background(self) -> None:
        """Hold this runner's lease while the node serves, and sweep up after runners that
        are gone (another replica killed), once per lease."""
        self.delegator.pool.open()  # calls to peers reuse their connections while it serves
        if self._background is None:
            await self._renew()
            # Tasks adopted at start-up are resumed here; so are those a supervisor that
            # recovered for its workers left to them (its runner never serves).
            with contextlib.suppress(StoreError):
                await self.recover()
            await self.resume_adopted()
            self._background = asyncio.get_running_loop().create_task(
                self._maintain(), context=contextvars.Context()
            )
        if self._delivering is None:
            self._delivering = asyncio.get_running_loop().create_task(
                self._deliver(), context=contextvars.Context()
            )

    async def stop_background(self) -> None:
        for task in (self._background, self._delivering):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._background = self._delivering = None
        await self.delegator.pool.aclose()
        with contextlib.suppress(Exception):  # a store that is down: the lease runs out
            await self.task_store.retire()

    async def _renew(self) -> None:
        with contextlib.suppress(StoreError):  # reported by the store as store.unavailable
            await self.task_store.heartbeat()

    async def _maintain(self) -> None:
        runner = self.task_store.runner
        beats = max(1, round(runner.lease_seconds / runner.heartbeat_every))
        while True:
            for _ in range(beats):
                await asyncio.sleep(runner.heartbeat_every)
                await self._renew()
            with contextlib.suppress(StoreError):
                await self.recover()
            await self.resume_adopted()
            with contextlib.suppress(StoreError):  # pushes a crash or another replica left
                await self.deliverer.sweep()
            with contextlib.suppress(StoreError):  # finished deliveries, receipts out of window
                await push_housekeeping.prune(
                    self.stores.push_outbox, self.stores.push_receipts, time.time(),
                    self.settings.push_verification_clock_skew_seconds,
                )

    async def _deliver(self) -> None:
        """Send the pushes owed: first whatever a previous run left owed, then as tasks move."""
        with contextlib.suppress(StoreError):
            await self.deliverer.sweep()
        await self.deliverer.run()

    def close(self) -> None:
        self.stores.close()


def _workers() -> int:
    """The worker processes serving this node's socket (`serve` sets the count for each)."""
    try:
        return max(1, int(os.environ.get(WORKERS_ENV) or 1))
    except ValueError:
        return 1


def _observability(config: NodeConfig, stores: Stores) -> tuple[Metrics | None, bool]:
    """The process's metrics (observability.metrics) and traces (an OTLP endpoint set)."""
    metrics = None
    if config.observability.metrics:
        metrics = Metrics(config.allowed_peers, stores.tasks.count_by_state,
                          stores.push_outbox.pending)
    set_outbound_metrics(metrics)
    traced = tracing.configure(config.a2a.node_name or "synthorg-a2a")
    return metrics, traced


def _instrumented(store: TaskStore, metrics: Metrics | None, traced: bool) -> TaskStore:
    """The task store, its calls timed and traced when either is on (untouched otherwise)."""
    if metrics is None and not traced:
        return store
    span = (lambda name: tracing.span(f"store.{name}")) if traced else None
    return cast(TaskStore, TimedStore(store, metrics, span))
