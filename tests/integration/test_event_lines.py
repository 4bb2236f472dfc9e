"""Event lines leave the process however it ends, in order, and a stderr nobody reads costs
dropped (and counted) lines, never a stalled process: each case is a real Python process
whose stderr is a real pipe.

With the writer's window made endless (`WINDOW`), a queued line is written only when
something flushes it: what reaches stderr then shows which flush ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

from tests.support.node import ROOT

ENDLESS = "from synthorg.observability import writer; writer.WINDOW = 3600.0\n"
PRELUDE = "import asyncio, sys\nfrom synthorg.observability import log\n"


def run(script: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60, check=False, **kwargs)


def events(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_lines_queued_by_a_loop_are_written_at_a_clean_exit() -> None:
    done = run(ENDLESS + PRELUDE + """
log.configure_logging("info")

async def main():
    for i in range(100):
        log.emit("t.request", n=i)

asyncio.run(main())
""")
    assert done.returncode == 0, done.stderr
    assert [e["n"] for e in events(done.stderr)] == list(range(100))


def test_lines_before_an_uncaught_error_come_before_its_traceback() -> None:
    done = run(ENDLESS + PRELUDE + """
log.configure_logging("info")

async def main():
    for i in range(50):
        log.emit("t.request", n=i)
    raise RuntimeError("the process dies of it")

asyncio.run(main())
""")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert [e["n"] for e in events(done.stderr)] == list(range(50))
    assert lines.index("Traceback (most recent call last):") == 50  # after every event line
    assert lines[-1] == "RuntimeError: the process dies of it"


def test_lines_outside_a_loop_keep_their_place_among_what_is_printed() -> None:
    """Start-up and shutdown: events and plain printed lines, on one stderr, in order."""
    done = run(PRELUDE + """
log.configure_logging("info")
log.emit("t.first")
print("printed 1", file=sys.stderr)

async def main():
    log.emit("t.in_loop", n=1)
    await asyncio.sleep(0)
    log.emit("t.in_loop", n=2)

asyncio.run(main())
log.flush()
print("printed 2", file=sys.stderr)
log.emit("t.last")
print("printed 3", file=sys.stderr)
""")
    assert done.returncode == 0, done.stderr
    shown = [json.loads(line)["event"] if line.startswith("{") else line
             for line in done.stderr.splitlines()]
    assert shown == ["t.first", "printed 1", "t.in_loop", "t.in_loop", "printed 2", "t.last",
                     "printed 3"]


def test_a_server_stopped_by_a_signal_writes_its_last_lines() -> None:
    """uvicorn ends a signalled shutdown by raising the signal again: the process dies of it
    and runs no exit handler, so the server itself writes what is queued first."""
    script = ENDLESS + PRELUDE + """
import socket
from synthorg.api.supervisor import FlushingServer
import uvicorn

log.configure_logging("info")

async def app(scope, receive, send):
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
            print("ready", flush=True)
        elif message["type"] == "lifespan.shutdown":
            for i in range(20):
                log.emit("t.shutdown", n=i)
            await send({"type": "lifespan.shutdown.complete"})
            return

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
FlushingServer(uvicorn.Config(app, lifespan="on", log_level="warning")).run(sockets=[sock])
"""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM  # died of the signal: no atexit ran
    assert [e["n"] for e in events(stderr) if e["event"] == "t.shutdown"] == list(range(20))


def test_a_stderr_nobody_reads_costs_counted_drops_not_a_stall() -> None:
    """30,000 lines at once into a pipe nobody reads: the pipe takes 64 KiB, the writer's one
    blocked write and the queue (10,000) hold some more, the rest is dropped and counted, in
    the process's count and its metric; emit never blocked (the script got to its report)."""
    script = PRELUDE + """
import logging
from synthorg.observability.metrics import Metrics, parse

log.configure_logging("info")

async def main():
    for i in range(30_000):
        log.emit("t.flood", n=i, padding="x" * 40)
    text = (await Metrics(frozenset()).render()).decode()
    [family] = [f for f in parse(text) if f.name == "synthorg_event_lines_dropped"]
    print(log.dropped_lines(), family.samples[0].value, flush=True)

asyncio.run(main())
for handler in logging.getLogger(log.LOGGER_NAME).handlers:  # until the test reads stderr
    if hasattr(handler, "writer"):
        handler.writer.flush(timeout=None)
"""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        report = proc.stdout.readline()  # stderr still unread
        _, stderr = proc.communicate(timeout=60)  # now read: the last flush completes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert report, stderr[-2000:]
    dropped, metric = report.split()
    assert int(dropped) >= 30_000 - 2 * 10_000 - 1000
    assert float(metric) == int(dropped)
    written = [e["n"] for e in events(stderr) if e["event"] == "t.flood"]
    assert len(written) + int(dropped) == 30_000  # every line written or counted
    assert written == sorted(written)
    assert proc.returncode == 0
