"""Worker processes for `serve --workers N`: one listening socket each, on one port.

uvicorn's own supervisor hands every worker the same socket. The kernel then wakes whichever
worker polls first and it accepts a whole burst of connections, so one worker can end up with
every kept-alive peer connection while the others idle. Here each worker gets a socket of its
own, all bound to the port with SO_REUSEPORT: the kernel spreads new connections evenly over
them, and a connection queued before its worker is ready waits on that worker's socket.

Everything else (health checks, restarting a worker that dies, stopping on a signal) is
uvicorn's supervisor's.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from uvicorn import Server
from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from synthorg.observability.log import flush as flush_log


class FlushingServer(Server):
    """uvicorn's server, whose queued event lines are written before it ends: a shutdown that
    a signal asked for ends by raising the signal again, and the process dies of it without
    running its exit handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                flush_log()


class _Worker(Process):
    """One worker process, serving with a `FlushingServer`."""

    @property
    def server(self) -> Server:
        if self._server is None:
            self._server = FlushingServer(config=self.config)
        return self._server


def listen_many(first: socket.socket, count: int, backlog: int) -> list[socket.socket]:
    """`first` (bound with SO_REUSEPORT and listening) and `count - 1` more like it."""
    host, port = first.getsockname()[:2]
    sockets = [first]
    for _ in range(count - 1):
        sock = socket.socket(first.family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.set_inheritable(True)
        sockets.append(sock)
    return sockets


class SocketPerWorker(Multiprocess):
    """uvicorn's supervisor, each worker serving the socket at its own index."""

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        super().__init__(config, sockets)
        self.processes_num = len(sockets)

    def _process(self, index: int) -> Process:
        return _Worker(self.config, [self.sockets[index]])

    def init_processes(self) -> None:
        for index in range(self.processes_num):
            process = self._process(index)
            process.start()
            self.processes.append(process)

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # It failed before serving: it would fail the same way at every restart.
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            replacement = self._process(index)
            replacement.start()
            self.processes[index] = replacement

    def restart_all(self) -> None:
        for index, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._process(index)
            new.start()
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                return
            old.terminate()
            old.join()
            self.processes[index] = new

    # One socket per worker: the count is fixed at start.
    def handle_ttin(self) -> None:
        return None

    def handle_ttou(self) -> None:
        return None
