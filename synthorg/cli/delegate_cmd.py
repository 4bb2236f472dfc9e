"""`synthorg-a2a delegate PEER TEXT`: hand a task to a catalog peer, and optionally follow it.

The CLI works on the node's data dir like the node itself: it reads `config.yaml` for
`a2a.node_name` (the name this node presents as `X-A2A-Peer-Name`), the catalog for the
peer's endpoint and link secret, and records the delegation in the node's database, so
`synthorg-a2a tasks ...` (and the node) see it. The client timeout is the runtime setting
`a2a.client_timeout_seconds`, so a runtime write applies to the next call.

This module also holds what `tasks` shares with it: opening the outbound side of a data dir,
the exit codes for peer and task outcomes, and the readable rendering of a task.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import grpc
from pydantic import ValidationError

from synthorg.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    existing_data_dir,
    fail,
    open_local,
    print_json,
    shown,
    task_json,
)
from synthorg.config.company import ConfigError, NodeConfig, load_config
from synthorg.delegation.delegator import SETTLED, DelegationError, Delegator, push_url
from synthorg.delegation.errors import PeerError, PeerProtocolError, PeerRpcError, PeerUnavailable
from synthorg.delegation.following import StreamGaveUp, follow_stream
from synthorg.delegation.sse_client import Events
from synthorg.dialects.objects import state_v03, task_v03
from synthorg.dialects.outbound import JSONRPC
from synthorg.generated.constants import TASK_STATE_COMPLETED, V1_TERMINAL_STATES
from synthorg.generated.models import (
    DataPart,
    FileWithUri,
    Part,
    Task,
    TextPart,
    V1Part,
    V1Task,
    V1TextPart,
)
from synthorg.names import canonical_peer_name
from synthorg.settings.runtime import RuntimeSettings
from synthorg.store.backend import Stores
from synthorg.store.catalog import Catalog
from synthorg.store.delegations import Delegation
from synthorg.store.tasks import TaskStore
from synthorg.tasks.hops import VISITED_KEY
from synthorg.tls.context import TlsFiles, client_context, grpc_client_credentials, tls_files

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

EXIT_PEER = 3  # the peer refused the call, could not be reached, or answered badly
EXIT_UNSUCCESSFUL = 4  # the task ended failed/canceled/rejected, or cannot be canceled
EXIT_STOPPED = 5  # gave up following before the task settled (it goes on at the peer)
EXIT_INTERRUPTED = 130

DEFAULT_WAIT_SECONDS = 120.0
UNSUCCESSFUL = V1_TERMINAL_STATES - {TASK_STATE_COMPLETED}

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK}  success
  {EXIT_NOT_FOUND}  no such peer in the catalog, or no such task
  2  usage, validation or configuration error (e.g. a2a.node_name not set)
  {EXIT_PEER}  the peer refused the call (its JSON-RPC error code is printed, e.g.
     -32003 not authenticated, -32004 not allowed, -32001 task not found), could not
     be reached, or answered something invalid
  {EXIT_UNSUCCESSFUL}  the task ended failed, canceled or rejected (delegate, follow);
     the task is already final and cannot be canceled (cancel)
  {EXIT_STOPPED}  --wait/follow gave up before the task settled; it goes on at the peer
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "delegate",
        help="send a task to a catalog peer (optionally wait for its result)",
        description="Send TEXT as a new task to the catalog peer PEER, as this node "
        "(a2a.node_name in config.yaml), and record it as an outbound task. Without "
        "--wait it returns as soon as the peer has the task, with its ids. With --wait, "
        "follow it until it completes, fails, is canceled or rejected, or needs input, "
        "printing each state change, progress message and artifact chunk as it arrives, "
        "then the task.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("peer", metavar="PEER", help="the peer's name in the catalog")
    parser.add_argument("text", metavar="TEXT", help="the message text")
    parser.add_argument("--agent", metavar="ID", help="the peer's agent to run the task "
                        "(default: the peer's default agent)")
    parser.add_argument("--wait", action="store_true",
                        help="follow the task until it is final or needs input")
    add_timeout_option(parser)
    parser.add_argument("--json", action="store_true",
                        help="print the (final) outbound record as JSON instead of text")
    add_data_dir_option(parser)
    parser.set_defaults(handler=run_delegate)


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=_seconds, default=DEFAULT_WAIT_SECONDS,
                        metavar="S", help="stop following after S seconds "
                        f"(default {DEFAULT_WAIT_SECONDS:g}); the task goes on at the peer")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0-86400]")
    return value


# -- the outbound side of a data dir ----------------------------------------------------


@dataclass
class Outbound:
    """What the CLI opens on a data dir to delegate, follow and list tasks."""

    directory: Path
    config: NodeConfig
    stores: Stores
    catalog: Catalog
    delegator: Delegator

    @property
    def tasks(self) -> TaskStore:
        """Inbound tasks (what peers gave this node)."""
        return self.stores.tasks

    def require_node_name(self) -> str:
        name = self.config.a2a.node_name
        if not name:
            source = self.config.source or self.directory / "config.yaml"
            fail(f"{source}: a2a.node_name is not set: add the name your peers know this "
                 "node by (it is sent as X-A2A-Peer-Name)")
        return name

    def require_peer(self, raw: str) -> str:
        name = canonical_peer_name(raw)
        if name is None or self.catalog.get(name) is None:
            fail(f"no peer named {shown(name or raw)} in the catalog (add it with: "
                 "synthorg-a2a peers add NAME --endpoint URL)", EXIT_NOT_FOUND)
        return name


def load_node_config(directory: Path) -> NodeConfig:
    try:
        return load_config(directory)
    except ConfigError as exc:
        fail(str(exc))


def _tls_files(config: NodeConfig, directory: Path) -> TlsFiles | None:
    return tls_files(config.server.tls,
                     config.source.parent if config.source is not None else directory)


def client_tls(config: NodeConfig, directory: Path) -> ssl.SSLContext | None:
    """The node's client certificate (server.tls), shown to peers as the node shows it."""
    try:
        return client_context(_tls_files(config, directory))
    except (OSError, ssl.SSLError) as exc:
        fail(f"server.tls: cannot load the node's certificate ({type(exc).__name__})")


def client_grpc_tls(config: NodeConfig, directory: Path) -> grpc.ChannelCredentials | None:
    """The same, for gRPC channels."""
    try:
        return grpc_client_credentials(_tls_files(config, directory))
    except OSError as exc:
        fail(f"server.tls: cannot load the node's certificate ({type(exc).__name__})")


@contextmanager
def open_outbound(directory: Path) -> Iterator[Outbound]:
    """The data dir's config, catalog, delegation records and client settings.

    Store failures become CliErrors; their messages never carry keys or secrets. A data dir
    that is not there holds no peer and no task: it is reported, not created."""
    config = load_node_config(existing_data_dir(directory))
    with open_local(directory) as stores:
        catalog = stores.catalog
        settings = RuntimeSettings(stores.settings, config.a2a)
        delegator = Delegator(
            catalog,
            stores.delegations,
            config.a2a.node_name,
            lambda: settings.client_timeout_seconds,  # read per call: runtime writes apply
            tls=client_tls(config, directory), grpc_tls=client_grpc_tls(config, directory),
        )
        yield Outbound(directory, config, stores, catalog, delegator)


# -- errors -----------------------------------------------------------------------------


def peer_error_line(peer: str, exc: PeerError) -> str:
    """One readable line naming the peer; never a secret or a raw body."""
    if isinstance(exc, PeerRpcError):
        status = ("" if exc.http_status == 200 else f" (HTTP {exc.http_status})"
                  ) if exc.transport_status is None else f" (gRPC {exc.transport_status})"
        return f"peer {peer} refused: {exc.code} {exc.message}{status}"
    detail = str(exc).removeprefix(f"{peer}: ")
    if isinstance(exc, PeerUnavailable):
        return f"peer {peer} unavailable: {detail}"
    if isinstance(exc, PeerProtocolError):
        return f"peer {peer} answered badly: {detail}"
    return f"peer {peer}: {detail}"


def peer_failure(peer: str, exc: PeerError) -> NoReturn:
    fail(peer_error_line(peer, exc), EXIT_PEER)


# -- rendering --------------------------------------------------------------------------


# The records keep 1.0 tasks and states; the commands show them as they always have, in 0.3's
# names and shapes (converted here, at the edge).


def record_state(record: Delegation) -> str:
    """A delegation's state by 0.3's name (`working`), as the commands show it."""
    return state_v03(record.state)


def record_json(record: Delegation) -> dict[str, Any]:
    """A delegation record as JSON: its fields, its task as the 0.3 wire carries it."""
    return {**{f.name: getattr(record, f.name) for f in fields(record)},
            "state": record_state(record), "binding": sent_in(record),
            "task": task_json(task_v03(record.task))}


def sent_in(record: Delegation) -> str:
    """The binding a delegation was sent in (one recorded before bindings were chosen went
    by JSON-RPC)."""
    return record.binding or JSONRPC


def status_text(task: Task | V1Task) -> str | None:
    message = task.status.message
    texts = ([p.text for p in message.parts if isinstance(p, TextPart | V1TextPart)]
             if message else [])
    return "\n".join(texts) or None


def safe_line(line: str) -> str:
    """A peer's text made safe for a terminal: control characters shown escaped."""
    return "".join(ch if ch.isprintable() or ch == "\t" else repr(ch)[1:-1] for ch in line)


def safe_lines(text: str) -> list[str]:
    return [safe_line(line) for line in text.splitlines()] or [""]


def _indented(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in safe_lines(text))


def _part_text(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, DataPart):
        return json.dumps(part.data, indent=2, ensure_ascii=False)
    file = part.file
    what = file.name or (file.uri if isinstance(file, FileWithUri) else None) or "unnamed"
    return f"(file {what}, {file.mimeType or 'no media type'})"


def print_artifacts(task: Task) -> None:  # a 0.3 task
    for artifact in task.artifacts or []:
        label = artifact.name or artifact.artifactId
        print(f"artifact {safe_line(shown(label))}:")
        for part in artifact.parts:
            print(_indented(_part_text(part)))


def print_fields(fields: list[tuple[str, str | None]]) -> None:
    width = max(len(key) for key, _ in fields) + 1
    for key, value in fields:
        if value is not None:
            lines = safe_lines(value)
            print(f"  {key:<{width}} {lines[0]}")
            for line in lines[1:]:
                print(f"  {'':<{width}} {line}")


def print_record(record: Delegation, title: str) -> None:
    print(title)
    print_fields([
        ("local id", record.id),
        ("remote task", record.remote_task_id),
        ("binding", sent_in(record)),
        ("context", record.context_id),
        ("state", record_state(record)),
        ("message", status_text(record.task)),
        ("forwards", f"inbound task {record.origin_task_id}" if record.origin_task_id else None),
        ("created", record.created_at),
        ("updated", record.updated_at),
    ])
    print_artifacts(task_v03(record.task))


def outcome_code(state: str) -> int:
    """The exit code of a delegation that ended in `state` (1.0's name)."""
    return EXIT_UNSUCCESSFUL if state in UNSUCCESSFUL else EXIT_OK


# -- following --------------------------------------------------------------------------


class Progress:
    """Prints what changes while following, as it arrives: each state change, each new
    progress message of the agent, each new artifact or chunk of one; quiet in --json mode.

    It is called with the record after every update (a stream event, a poll, a push) and
    prints only what that update brought; `trouble` says the peer could not be reached."""

    def __init__(self, peer: str, quiet: bool) -> None:
        self._peer = peer
        self._quiet = quiet
        self._start = time.monotonic()
        self._state: str | None = None
        self._message: str | None = None
        self._parts: dict[str, int] = {}  # artifactId -> parts already shown

    def _stamp(self) -> str:
        return f"  [{time.monotonic() - self._start:6.1f}s]"

    def __call__(self, record: Delegation) -> None:
        if self._quiet:
            return
        text = status_text(record.task)
        state = record_state(record)
        if state != self._state or (text is not None and text != self._message):
            self._state, self._message = state, text
            detail = f": {' / '.join(safe_lines(text))}" if text else ""
            print(f"{self._stamp()} {safe_line(state)}{detail}", flush=True)
        for artifact in task_v03(record.task).artifacts or []:
            key = artifact.artifactId
            parts = artifact.parts
            shown_before = self._parts.get(key, 0)
            if len(parts) <= shown_before:
                continue
            self._parts[key] = len(parts)
            label = safe_line(shown(artifact.name or key))
            for part in parts[shown_before:]:
                lines = safe_lines(_part_text(part).rstrip("\n"))
                print(f"{self._stamp()} artifact {label}: {lines[0]}", flush=True)
                for line in lines[1:]:
                    print(f"{'':{len(self._stamp())}}   {line}", flush=True)

    def trouble(self) -> None:
        if not self._quiet:
            print(f"{self._stamp()} could not reach {self._peer} (or it answered with an "
                  "error); still following", flush=True)


Opened = tuple[Events, int | None]  # a message/stream open after its Task, and its seq


async def _streams(out: Outbound, peer: str) -> bool:
    try:
        return await out.delegator.streams(peer)
    except (PeerError, DelegationError):
        return False


async def follow(
    out: Outbound, record: Delegation, timeout: float, quiet: bool,
    opened: Opened | None = None,
) -> Delegation:
    """Follow by push when this node has a public url and the peer agrees (the node's
    receiver updates the record the follower reads), else by stream when the peer's card
    says it streams, else by polling; each way rides out a restart of the peer (and, by
    push, of the node: the peer's pushes are retried and the peer is still polled)."""
    how = "stream" if opened is not None else await _follow_mode(out, record)
    if not quiet:
        print(f"following {record.id} at {record.peer} by {how} (at most {timeout:g}s)",
              flush=True)
    progress = Progress(record.peer, quiet)
    deadline = time.monotonic() + timeout
    try:
        if how == "stream":
            streamed = await _follow_stream(out, record, timeout, progress, opened)
            if streamed is not None:
                return streamed
        remaining = max(0.001, deadline - time.monotonic())
        return await out.delegator.follow(record.id, remaining, progress, pushed=how == "push",
                                          on_trouble=progress.trouble)
    except DelegationError as exc:
        fail(f"stopped following: {exc}; see later with: synthorg-a2a tasks follow "
             f"{record.id}", EXIT_STOPPED)


async def _follow_mode(out: Outbound, record: Delegation) -> str:
    url = push_url(out.config.a2a.public_url, record.peer)
    if url is not None and await out.delegator.request_pushes(record, url):
        return "push"
    return "stream" if await _streams(out, record.peer) else "polling"


async def _follow_stream(
    out: Outbound, record: Delegation, timeout: float, progress: Progress,
    opened: Opened | None,
) -> Delegation | None:
    """Follow by stream; None when the peer will not be followed so (the caller polls)."""
    progress(record)

    async def updated(current: Delegation) -> None:
        progress(current)

    async def trouble(current: Delegation, _: PeerError) -> None:
        progress.trouble()

    try:
        async with asyncio.timeout(timeout):
            events, last = opened if opened is not None else (None, None)
            return await follow_stream(out.delegator, record, SETTLED, updated, trouble,
                                       events=events, last=last)
    except TimeoutError:
        latest = await out.delegator.get(record.id)
        raise DelegationError(
            f"task {record.id} still {record_state(latest)} after {timeout:g}s; it goes on at "
            "the peer"
        ) from None
    except StreamGaveUp:
        return None


def interrupted(record: Delegation) -> int:
    print(f"\nstopped following; the task goes on at {record.peer}: "
          f"synthorg-a2a tasks follow {record.id}", file=sys.stderr)
    return EXIT_INTERRUPTED


def finish(record: Delegation, as_json: bool, title: str) -> int:
    if as_json:
        print_json(record_json(record))
    else:
        print_record(record, title)
    return outcome_code(record.state)


# -- the command ------------------------------------------------------------------------


def run_delegate(args: argparse.Namespace) -> int:
    with open_outbound(data_dir(args)) as out:
        return asyncio.run(_delegate(out, args))


async def _delegate(out: Outbound, args: argparse.Namespace) -> int:
    node_name = out.require_node_name()
    peer = out.require_peer(args.peer)
    try:
        parts: list[V1Part] = [V1TextPart(text=args.text)]
    except ValidationError:
        fail(f"the text is longer than a message part may be ({len(args.text)} characters)")
    # This node is the first hop: a peer that forwards the task back here is refused.
    metadata = {VISITED_KEY: [node_name]}
    message_id = str(uuid.uuid4())  # fixed: a second attempt lands on the same task
    opened: Opened | None = None
    if args.wait and not out.config.a2a.public_url and await _streams(out, peer):
        # Followed by stream from the start: message/stream, read on after the Task.
        with contextlib.suppress(PeerError):  # else sent below, with the same messageId
            record, events, last = await out.delegator.delegate_streaming(
                peer, parts, agent_id=args.agent, metadata=metadata, message_id=message_id
            )
            opened = (events, last)
    try:
        if opened is None:
            # Non-blocking: the peer answers once it has the task, never after its work; with
            # --wait the task is followed, so no call is held open while it works (and a
            # restart cannot cut it).
            record = await out.delegator.delegate(
                peer, parts, agent_id=args.agent, metadata=metadata, message_id=message_id,
                blocking=False,
            )
    except PeerError as exc:
        peer_failure(peer, exc)
    agent = f", agent {args.agent}" if args.agent else ""
    if not args.wait or record.state in SETTLED:
        if opened is not None:
            await opened[0].aclose()
        code = finish(record, args.json, f"delegated to {peer}{agent} over {sent_in(record)}")
        if not args.json and record.state not in SETTLED:
            print(f"it runs at {peer}; follow it with: synthorg-a2a tasks follow {record.id}")
        return code
    if not args.json:
        print(f"delegated to {peer}{agent} over {sent_in(record)}: local id {record.id}, "
              f"remote task {record.remote_task_id}")
    try:
        record = await follow(out, record, args.timeout, args.json, opened)
    except (KeyboardInterrupt, asyncio.CancelledError):
        return interrupted(record)
    return finish(record, args.json, "result")
