"""`make demo` (`python -m synthorg.demo`): two federated nodes on loopback, one delegation.

Node A and node B each get a temporary data dir and a config.yaml naming itself and
admitting the other. Both start as separate processes on free loopback ports; the operator
steps run through the `synthorg-a2a` CLI: each node registers the other with one generated
link secret (each catalog record holds the secret both sides use on that link), then A
delegates a task to B's echo agent and waits for the result. Both nodes are shut down
whatever happens (also on Ctrl-C), and the data dirs are removed unless --keep is given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
CLI_TIMEOUT = 60.0
TASK_TEXT = "Hello from node A: please echo this back."
SHOWN_EVENTS = ("a2a.inbound.received", "a2a.task.created", "a2a.task.state_changed")

CONFIG = """\
company:
  name: {title}
agents:
  - id: echo
    name: Echo
    role: Echoes the text it is sent
    executor: {{kind: echo}}
a2a:
  enabled: true
  node_name: {name}
  allowed_peers: [{other}]
"""


class DemoError(Exception):
    """A step failed; the message says which."""


def say(text: str) -> None:
    print(text, flush=True)


def step(number: int, text: str) -> None:
    say(f"\n== {number}. {text}")


class DemoNode:
    """One node as a child process on a free loopback port (SYNTHORG_BACKEND_PORT=0).

    The node writes its `a2a.node.started` event (with the real port) on stderr once it
    listens; a reader thread keeps its log lines, for when something goes wrong."""

    def __init__(self, name: str, title: str, data_dir: Path) -> None:
        self.name = name
        self.title = title
        self.data_dir = data_dir
        self.port = 0
        self.lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._started = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def configure(self, other: str) -> None:
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        config = CONFIG.format(title=self.title, name=self.name, other=other)
        (self.data_dir / "config.yaml").write_text(config)

    def start(self) -> None:
        env = {
            **os.environ,
            "SYNTHORG_DATA_DIR": str(self.data_dir),
            "SYNTHORG_BACKEND_HOST": "127.0.0.1",
            "SYNTHORG_BACKEND_PORT": "0",
        }
        env.pop("SYNTHORG_SECRET_KEY", None)  # each node keeps its own key in its data dir
        # Its own session: Ctrl-C reaches only the demo, which then stops the nodes in order.
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "synthorg.api"], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()
        if not self._started.wait(START_TIMEOUT) or not self.port:
            raise DemoError(f"{self.name} did not start:\n" + self.tail())

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if not self._started.is_set() and '"a2a.node.started"' in line:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    self.port = int(json.loads(line)["port"])
                self._started.set()
        self._started.set()  # the process ended: unblock start()

    def events(self, names: tuple[str, ...]) -> list[str]:
        """This node's log events named `names`, one short line each."""
        shown = []
        for line in list(self.lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") in names:
                fields = " ".join(
                    f"{key}={value}" for key, value in event.items()
                    if key not in ("ts", "level", "event", "request_id")
                )
                shown.append(f"{event['event']}  {fields}")
        return shown

    def tail(self, count: int = 15) -> str:
        return "\n".join(f"   | {line}" for line in self.lines[-count:])

    def stop(self) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode


def cli(node: DemoNode, *args: str, stdin: str | None = None) -> str:
    """Run `synthorg-a2a ARGS --data-dir NODE_DIR`, showing the command and its output."""
    shown = " ".join(shlex.quote(a) for a in ("synthorg-a2a", *args))
    say(f"[{node.name}] $ {shown}" + (" < (the link secret)" if stdin is not None else ""))
    env = {key: value for key, value in os.environ.items() if key != "SYNTHORG_SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", *args, "--data-dir", str(node.data_dir)],
        input=stdin if stdin is not None else "", capture_output=True, text=True, env=env,
        timeout=CLI_TIMEOUT, check=False,
    )
    for line in (result.stdout + result.stderr).splitlines():
        say(f"    {line}")
    if result.returncode != 0:
        raise DemoError(f"`{shown}` exited with {result.returncode}")
    return result.stdout


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def running(node: DemoNode) -> Iterator[DemoNode]:
    try:
        node.start()
        say(f"   {node.name} ({node.title}) listens on {node.url}")
        yield node
    finally:
        code = node.stop()
        if code is not None:
            # uvicorn re-raises SIGTERM after its graceful shutdown: -15 is a clean stop.
            clean = code in (0, -signal.SIGTERM)
            say(f"   {node.name} stopped" + ("" if clean else f" (exit {code})"))


def run(root: Path) -> None:
    a = DemoNode("node-a", "Node A", root / "node-a")
    b = DemoNode("node-b", "Node B", root / "node-b")

    step(1, "configure: each node names itself and admits the other (config.yaml)")
    a.configure(other=b.name)
    b.configure(other=a.name)
    say(f"   {a.data_dir}/config.yaml:")
    say("\n".join(f"     {line}" for line in CONFIG.format(
        title=a.title, name=a.name, other=b.name).splitlines()))

    with ExitStack() as nodes:
        step(2, "start both nodes on free loopback ports")
        nodes.enter_context(running(a))
        nodes.enter_context(running(b))

        step(3, "register them with each other, with one generated link secret")
        link_secret = secrets.token_urlsafe(32)
        cli(a, "peers", "add", b.name, "--endpoint", b.url, stdin=link_secret)
        cli(b, "peers", "add", a.name, "--endpoint", a.url, stdin=link_secret)

        step(4, "node A delegates a task to node B's echo agent and waits for it")
        cli(a, "delegate", b.name, TASK_TEXT, "--agent", "echo", "--wait", "--timeout", "30")

        step(5, "each side's view of the task")
        cli(a, "tasks", "list", "--outbound")
        cli(b, "tasks", "list", "--inbound")
        say("   node B's log for it:")
        for line in b.events(SHOWN_EVENTS):
            say(f"     {line}")

        step(6, "shut both nodes down")
    say("\ndemo finished: node A delegated a task to node B and got its result.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m synthorg.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true",
                        help="keep the two data dirs (their paths are printed)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    root = Path(tempfile.mkdtemp(prefix="synthorg-demo-"))
    say(f"SynthOrg A2A demo: two nodes on loopback (data dirs under {root})")
    try:
        run(root)
        return 0
    except DemoError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ndemo interrupted; both nodes were stopped", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            say(f"data dirs kept under {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
