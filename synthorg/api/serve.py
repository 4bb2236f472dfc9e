"""Start a node: check and prepare once, listen, then serve in one or several processes.

On SQLite (the data dir's store), `serve` runs the start-up work exactly once, before the
socket listens: the config and the data dir are checked, the store migrated, unfinished tasks
recovered and the operator warned of what needs attention. With `workers` > 1 the listening
socket is shared by that many worker processes (uvicorn's supervisor restarts one that dies);
each builds its own node on the same data dir, and everything they share (tasks, idempotency
keys, the catalog, the settings) is serialised in the store, not in a process.

On PostgreSQL (`SYNTHORG_DATABASE_URL`, shared by replicas), what needs no database is
checked before listening (the config, the admin token, the shared key); then the node listens
at once and each process reaches the database in its event loop, retrying with backoff while
it cannot (`store.waiting`; `/readyz` answers 503 meanwhile), migrates under the database's
lock (replicas starting together migrate once), recovers only the tasks of runners that are
gone, and serves (`a2a.node.started`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from synthorg.admin.token import AdminToken
from synthorg.config.company import CONFIG_FILE, ConfigError, NodeConfig
from synthorg.errors import SchemaTooNew, StoreError, StoreUnavailable
from synthorg.http.numbers import ascii_int
from synthorg.node import Node, NodeSetup, is_loopback, prepare
from synthorg.observability.events import a2a as events
from synthorg.observability.events import admin as admin_events
from synthorg.observability.events import store as store_events
from synthorg.observability.log import LOG_LEVEL_ENV, configure_logging, emit, log_level_from
from synthorg.observability.log import flush as flush_log
from synthorg.store.backend import Stores
from synthorg.store.secretbox import SecretBoxError
from synthorg.store.select import OptionsError, open_stores, runner_from_env, uses_postgres
from synthorg.tls.context import TlsFiles, tls_files
from synthorg.web.app import NodeApp
from synthorg.web.starting import Booted, StartingApp

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
WORKERS_ENV = "SYNTHORG_WORKERS"
MAX_WORKERS = 64
WORKER_APP = "synthorg.api.worker:create_app"
BACKLOG = 2048
FIRST_RETRY, MAX_RETRY = 0.25, 5.0  # seconds between attempts to reach the store at start


def serve(data_dir: Path, host: str, port: int, workers: int = 1) -> int:
    try:
        configure_logging(log_level_from(os.environ.get(LOG_LEVEL_ENV)))
    except ValueError as exc:
        print(f"error: {LOG_LEVEL_ENV}: {exc}", file=sys.stderr)
        return 2
    try:
        shared = uses_postgres()
    except OptionsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if shared:
        return _serve_shared(data_dir, host, port, workers)
    return _serve_local(data_dir, host, port, workers)


def _serve_local(data_dir: Path, host: str, port: int, workers: int) -> int:
    """SQLite: every check and the start-up work before the socket listens."""
    try:
        node = Node.build(data_dir, host)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error, SecretBoxError, StoreError, OptionsError) as exc:
        print(f"error: cannot open the data dir {data_dir}: {exc}", file=sys.stderr)
        return 2
    try:
        # Recover before announcing the node: a task left working by a previous run is
        # failed before anyone can ask about it. This node is the data dir's only server,
        # so every earlier runner is gone.
        asyncio.run(node.recover(others_gone=True))
        flush_log()  # its lines before anything printed from here
        node.warn_at_start(host)
        tls = served_tls(node.config, data_dir)
        _say_at_start(data_dir, node.config.source, node.admin_token, host, tls is not None)
        try:
            sockets = _listen_all(host, port, workers)
        except OSError as exc:
            print(f"error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            return 2
        # The socket is listening before this line is written, so a supervisor (or a test)
        # may connect as soon as it reads the event; port 0 picks a free port, reported here.
        port = sockets[0].getsockname()[1]
        _say_serving(host, port, tls is not None)
        _started(node, host, port, data_dir, workers)
        stopped = _stopped(host, port, workers)
        if workers == 1:
            return _run_one(node.app((host, port)), node.config.server, tls, sockets[0], stopped)
    finally:
        node.close()
    code = _run_workers(data_dir, host, workers, node.config.server, tls, sockets)
    stopped()
    return code


def _serve_shared(data_dir: Path, host: str, port: int, workers: int) -> int:
    """PostgreSQL: check what needs no database, listen, then reach it (see the docstring)."""
    try:
        setup = prepare(data_dir, host)
        stores = open_stores(data_dir, runner_from_env(), migrate=False)  # connects later
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, SecretBoxError, OptionsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tls = served_tls(setup.config, data_dir)
    _say_at_start(data_dir, setup.config.source, setup.admin_token, host, tls is not None)
    try:
        sockets = _listen_all(host, port, workers)
    except OSError as exc:
        stores.close()
        print(f"error: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        return 2
    port = sockets[0].getsockname()[1]
    emit(events.NODE_LISTENING, host=host, port=port, workers=workers, store="postgresql")
    _say_serving(host, port, tls is not None)
    stopped = _stopped(host, port, workers)
    if workers > 1:
        stores.close()  # each worker reaches the database itself
        code = _run_workers(data_dir, host, workers, setup.config.server, tls, sockets)
        stopped()
        return code
    exit_code = [0]
    server: Any = None

    def fatal(message: str) -> None:
        print(f"error: {message}", file=sys.stderr, flush=True)
        exit_code[0] = 2
        if server is not None:
            server.should_exit = True

    app = StartingApp(lambda: boot_shared(setup, stores, host, port, workers, fatal))

    def clean_stop() -> None:
        if exit_code[0] == 0:  # not stopped by a fatal start-up error
            stopped()

    try:
        server = _server(app, setup.config.server, tls, clean_stop)
        settle_memory()
        server.run(sockets=[sockets[0]])
    finally:
        stores.close()
    return exit_code[0]


async def boot_shared(setup: NodeSetup, stores: Stores, host: str, port: int,
                      workers: int, fatal: Callable[[str], None]) -> Booted:
    """Reach the shared store (retrying with backoff), migrate, build the node, recover the
    tasks of runners that are gone; its app, and how to announce it once it serves."""
    delay = FIRST_RETRY
    while True:
        try:
            found, now = await stores.start()
            node = Node.build(setup.data_dir, host, stores=stores, setup=setup)
            await node.recover()
            break
        except SchemaTooNew as exc:
            fatal(f"cannot serve this database: {exc}")
            raise
        except (StoreUnavailable, OSError) as exc:
            emit(store_events.WAITING, level="warning", reason=str(exc), retry_in=delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_RETRY)
    if found != now:
        emit(store_events.MIGRATED, backend=stores.backend, from_version=found, to_version=now)
    node.warn_at_start(host)
    return node.app((host, port)), lambda: _started(node, host, port, setup.data_dir, workers)


def _say_at_start(data_dir: Path, config_source: Path | None, token: AdminToken,
                  host: str, tls: bool) -> None:
    if config_source is None:
        print(f"no {data_dir / CONFIG_FILE}: starting with defaults (a2a disabled)",
              file=sys.stderr)
    _announce_admin_token(token, host, tls)


def _started(node: Node, host: str, port: int, data_dir: Path, workers: int) -> None:
    emit(
        events.NODE_STARTED,
        host=host,
        port=port,
        data_dir=str(data_dir),
        a2a_enabled=node.enabled,
        allowed_peers=sorted(node.config.allowed_peers),
        workers=workers,
        store=node.stores.backend,
    )


def _say_serving(host: str, port: int, https: bool = False) -> None:
    """One line for the person who started the node: where to point a client or a browser."""
    wildcard = host in ("0.0.0.0", "::")
    shown = "127.0.0.1" if host == "0.0.0.0" else "::1" if host == "::" else host
    scheme = "https" if https else "http"
    base = f"{scheme}://[{shown}]:{port}" if ":" in shown else f"{scheme}://{shown}:{port}"
    where = " (every address of this machine)" if wildcard else ""
    print(f"serving on {base}{where}: A2A at {base}/api/v1/a2a/, API docs at {base}/docs",
          file=sys.stderr, flush=True)


def _stopped(host: str, port: int, workers: int) -> Callable[[], None]:
    """What says `a2a.node.stopped` once the node has shut down cleanly, starting the clock
    of its uptime now."""
    began = time.monotonic()

    def say() -> None:
        emit(events.NODE_STOPPED, host=host, port=port, workers=workers,
             uptime_seconds=round(time.monotonic() - began, 3))
        flush_log()  # said from the loop, which may not turn again

    return say


def _listen_all(host: str, port: int, workers: int) -> list[socket.socket]:
    from synthorg.api.supervisor import listen_many

    sock = _listen(host, port, workers)
    # Every worker's socket listens before the node says it is started.
    return [sock] if workers == 1 else listen_many(sock, workers, BACKLOG)


def served_tls(config: NodeConfig, data_dir: Path) -> TlsFiles | None:
    """The files of `server.tls`, relative ones read from the config file's directory."""
    return tls_files(config.server.tls,
                     config.source.parent if config.source is not None else data_dir)


def _options(server_config: Any, tls: TlsFiles | None) -> dict[str, Any]:
    from synthorg.http import uvicorn_options
    from synthorg.tls.context import uvicorn_tls_options

    return {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        **uvicorn_options(server_config),  # connection limits (synthorg.http)
        **uvicorn_tls_options(tls),  # HTTPS, client certificates
    }


def _server(app: Any, server_config: Any, tls: TlsFiles | None,
            stopped: Callable[[], None]) -> Any:
    # Imported here: the web stack is heavy and CLI commands that do not serve skip it.
    import uvicorn

    from synthorg.api.supervisor import FlushingServer

    class Server(FlushingServer):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn ends a shutdown that a signal asked for by raising the signal again, so
            # the process dies of it: the last word has to be said before that.
            with super().capture_signals():
                yield
                stopped()

    return Server(uvicorn.Config(app, **_options(server_config, tls)))


def _run_one(app: NodeApp, server_config: Any, tls: TlsFiles | None, sock: socket.socket,
             stopped: Callable[[], None]) -> int:
    server = _server(app, server_config, tls, stopped)
    settle_memory()
    server.run(sockets=[sock])
    return 0


def _run_workers(data_dir: Path, host: str, workers: int, server_config: Any,
                 tls: TlsFiles | None, sockets: list[socket.socket]) -> int:
    import uvicorn

    from synthorg.api.supervisor import SocketPerWorker
    from synthorg.observability.metrics import (
        MULTIPROC_ENV,
        cleanup_multiprocess,
        prepare_multiprocess,
    )

    # Each worker builds its node from the environment (spawned processes share nothing).
    os.environ["SYNTHORG_DATA_DIR"] = str(data_dir)
    os.environ["SYNTHORG_BACKEND_HOST"] = host
    os.environ["SYNTHORG_BACKEND_PORT"] = str(sockets[0].getsockname()[1])
    os.environ[WORKERS_ENV] = str(workers)
    config = uvicorn.Config(WORKER_APP, factory=True, workers=workers,
                            **_options(server_config, tls))
    # Every worker's metrics go to files in one directory, summed at each scrape.
    owned = not os.environ.get(MULTIPROC_ENV)
    metrics_dir = prepare_multiprocess()
    try:
        SocketPerWorker(config, sockets).run()
    finally:
        if owned:
            cleanup_multiprocess(metrics_dir)
    return 0


def settle_memory() -> None:
    """Keep the collector's pauses short and rare once the app is built.

    Everything allocated at start-up (the spec, the models, the app) lives as long as the
    process: frozen, the collector never walks it again. A request allocates a few hundred
    tracked objects and frees nearly all of them at once, so collections can be rarer.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def _announce_admin_token(token: AdminToken, host: str, tls: bool = False) -> None:
    """Say where the operator's admin token is; never the token itself."""
    if token.path is None:
        where = "from SYNTHORG_ADMIN_TOKEN"
    else:
        where = f"in {token.path} (mode 0600{', generated now' if token.created else ''})"
    print(f"admin API token: {where}", file=sys.stderr)
    emit(
        admin_events.TOKEN_READY,
        source=token.source,
        path=None if token.path is None else str(token.path),
        created=token.created,
    )
    if not is_loopback(host) and not tls:  # served over TLS, the token is not in the clear
        emit(
            admin_events.NON_LOOPBACK,
            level="warning",
            host=host,
            reason="the admin API (/api/v1/admin/) shares this socket and sends its bearer token "
            "in the clear over plain HTTP: put TLS in front of the node, or keep "
            "/api/v1/admin/ off the public listener",
        )


def _listen(host: str, port: int, workers: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if workers > 1:  # each worker gets a socket of its own on this port (api/supervisor.py)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def workers_from(raw: str | None) -> int:
    """A worker count (1 when unset); ValueError naming the bound otherwise."""
    if raw is None or raw == "":
        return 1
    count = ascii_int(raw, 3)
    if count is None or not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"{raw!r} is not a worker count (1-{MAX_WORKERS})")
    return count
