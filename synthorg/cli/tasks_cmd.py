"""`synthorg-a2a tasks ...`: this node's tasks, both directions.

Outbound tasks are the delegation records this node wrote when it handed tasks to peers
(`delegate`, or an agent with a `peer` executor); their ids are local ids, and `--refresh`,
`follow` and `cancel` ask the peer. Inbound tasks are the ones peers gave this node.

An inbound cancel runs here, on the data dir, through the node's own task service: the same
rules as a peer's `tasks/cancel` (a final task is not cancelable; a forwarding agent cancels
its downstream task first), and the peer that gave the task sees `canceled` on its next
`tasks/get`. A running node needs no restart to see it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from synthorg.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    fail,
    print_json,
    shown,
    task_json,
)
from synthorg.cli.delegate_cmd import (
    EXIT_CODES,
    EXIT_PEER,
    EXIT_UNSUCCESSFUL,
    Outbound,
    add_timeout_option,
    finish,
    follow,
    interrupted,
    open_outbound,
    peer_error_line,
    peer_failure,
    print_artifacts,
    print_fields,
    print_record,
    record_json,
    record_state,
    sent_in,
    status_text,
)
from synthorg.config.company import ConfigError
from synthorg.delegation.delegator import SETTLED
from synthorg.delegation.errors import PeerError, PeerRpcError
from synthorg.dialects.objects import task_v03
from synthorg.errors import TaskNotCancelable, TaskNotFound
from synthorg.generated.constants import (
    STATE_CANCELED,
    TASK_DIRECTION_INBOUND,
    TASK_DIRECTION_OUTBOUND,
    TASK_NOT_CANCELABLE,
    TASK_STATE_CANCELED,
    TERMINAL_STATES,
)
from synthorg.generated.models import Task
from synthorg.store.delegations import Delegation

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

DEFAULT_LIMIT = 50
ID_HELP = ("a local (outbound) id or an inbound task id (or the start of one, at least 4 "
           "characters)")


def register(subparsers: Subparsers) -> None:
    tasks = subparsers.add_parser(
        "tasks",
        help="list, show, follow and cancel tasks (outbound and inbound)",
        description="Outbound tasks: what this node delegated to peers (local ids). "
        "Inbound tasks: what peers delegated to this node.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = tasks.add_subparsers(dest="tasks_command", metavar="COMMAND", required=True)

    list_ = _command(commands, "list", "list recent tasks, newest first")
    direction = list_.add_mutually_exclusive_group()
    direction.add_argument("--outbound", action="store_true",
                           help="only tasks this node delegated to peers")
    direction.add_argument("--inbound", action="store_true",
                           help="only tasks peers delegated to this node")
    list_.add_argument("--limit", type=_limit, default=DEFAULT_LIMIT, metavar="N",
                       help=f"at most N of each (default {DEFAULT_LIMIT})")
    list_.add_argument("--refresh", action="store_true",
                       help="ask the peers for the current state of each unfinished outbound "
                       "task first (without it, outbound states are the last known)")
    list_.set_defaults(handler=run_list)

    get = _command(commands, "get", "show one task")
    get.add_argument("id", metavar="ID", help=ID_HELP)
    get.add_argument("--refresh", action="store_true",
                     help="for an outbound task: ask the peer for its current state first")
    get.set_defaults(handler=run_get)

    follow_ = _command(commands, "follow",
                       "follow an outbound task until it is final or needs input")
    follow_.add_argument("id", metavar="ID", help="a local (outbound) id (or the start of "
                         "one, at least 4 characters)")
    add_timeout_option(follow_)
    follow_.set_defaults(handler=run_follow)

    cancel = _command(commands, "cancel", "cancel a task (an outbound one at its peer)")
    cancel.add_argument("id", metavar="ID", help=ID_HELP)
    cancel.set_defaults(handler=run_cancel)


def _command(commands: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_data_dir_option(parser)
    return parser


def _limit(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (1-1000)")
    return int(text)


# -- inbound tasks: the store is keyed on the owning peer --------------------------------
# The store keeps A2A 1.0 tasks; the command shows (and prints as JSON) the 0.3 Task it always
# has, converted here.


def _known_peers(out: Outbound) -> list[str]:
    """Every peer that may own an inbound task: the catalog and the allowlist."""
    return sorted({r.name for r in out.catalog.list()} | set(out.config.allowed_peers))


async def _inbound(out: Outbound, limit: int) -> list[tuple[str | None, Task]]:
    store = out.tasks
    owner: dict[str, str] = {}
    for peer in _known_peers(out):
        for task in await store.list(peer, limit):
            owner[task.id] = peer
    return [(owner.get(t.id), task_v03(t)) for t in await store.list(None, limit)]


async def _find_inbound(out: Outbound, task_id: str) -> tuple[str, Task] | None:
    for peer in _known_peers(out):
        stored = await out.tasks.get(peer, task_id)
        if stored is not None:
            return peer, task_v03(stored.task)
    return None


def _agent_of(task: Task) -> str:
    return str((task.metadata or {}).get("agentId", "-"))


def _print_inbound(peer: str, task: Task) -> None:
    print(f"inbound task (from {peer}, agent {_agent_of(task)})")
    print_fields([
        ("id", task.id),
        ("context", task.contextId),
        ("state", task.status.state),
        ("message", status_text(task)),
        ("updated", task.status.timestamp),
        ("history", f"{len(task.history or [])} messages"),
    ])
    print_artifacts(task)


def _inbound_json(peer: str | None, task: Task) -> dict[str, Any]:
    return {"peer": peer, "task": task_json(task)}


# -- list -------------------------------------------------------------------------------


def _table(rows: Iterable[tuple[str, ...]], header: tuple[str, ...]) -> None:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _print_outbound_list(records: list[Delegation], refreshed: bool,
                         unreachable: set[str]) -> None:
    print("outbound (delegated by this node to peers)")
    if not records:
        print("  none")
        return
    if refreshed:
        print("  states as the peers answered now (unreachable: the last known)")
    else:
        print("  states are the last known here, as of UPDATED (--refresh asks the peers)")
    _table(((r.id, r.peer, sent_in(r), record_state(r) + (" (unreachable)" if r.id in unreachable
                                                   else ""),
             r.remote_task_id, r.updated_at) for r in records),
           ("LOCAL ID", "PEER", "BINDING", "STATE", "REMOTE TASK", "UPDATED"))


async def _refreshed(out: Outbound, records: list[Delegation]
                     ) -> tuple[list[Delegation], set[str]]:
    """Each unfinished record as its peer answers now; the ids of those it could not ask."""
    fresh: list[Delegation] = []
    unreachable: set[str] = set()
    for record in records:
        if record.state not in SETTLED:
            try:
                record = await out.delegator.refresh(record.id)
            except PeerError:
                unreachable.add(record.id)
        fresh.append(record)
    return fresh, unreachable


def _print_inbound_list(tasks: list[tuple[str | None, Task]]) -> None:
    print("inbound (delegated to this node by peers)")
    if not tasks:
        print("  none")
        return
    rows = (
        (t.id, peer or "?", _agent_of(t), t.status.state, t.status.timestamp or "")
        for peer, t in tasks
    )
    _table(rows, ("TASK ID", "PEER", "AGENT", "STATE", "UPDATED"))


def run_list(args: argparse.Namespace) -> int:
    with open_outbound(data_dir(args)) as out:
        return asyncio.run(_list(out, args))


async def _list(out: Outbound, args: argparse.Namespace) -> int:
    both = not (args.outbound or args.inbound)
    result: dict[str, Any] = {}
    if args.outbound or both:
        records = await out.delegator.store.recent(args.limit)
        unreachable: set[str] = set()
        if args.refresh:
            out.require_node_name()
            records, unreachable = await _refreshed(out, records)
        result[TASK_DIRECTION_OUTBOUND] = [record_json(r) for r in records]
        if not args.json:
            _print_outbound_list(records, args.refresh, unreachable)
    if args.inbound or both:
        tasks = await _inbound(out, args.limit)
        result[TASK_DIRECTION_INBOUND] = [_inbound_json(peer, t) for peer, t in tasks]
        if not args.json:
            _print_inbound_list(tasks)
    if args.json:
        print_json(result)
    return EXIT_OK


# -- get, follow, cancel ----------------------------------------------------------------

MIN_PREFIX = 4  # characters of an id before a prefix stands for it
PREFIX_SCAN = 1000  # the most recent tasks of each direction a prefix is matched against
SHOWN_CANDIDATES = 5


async def _resolved(out: Outbound, raw: str, *, outbound_only: bool = False) -> str:
    """The task id `raw` stands for: itself when a task has that id, else the one id among
    the recent tasks that starts with it; an ambiguous prefix is an error naming some."""
    if await out.delegator.store.get(raw) is not None or len(raw) < MIN_PREFIX:
        return raw
    if not outbound_only and await _find_inbound(out, raw) is not None:
        return raw
    ids = [r.id for r in await out.delegator.store.recent(PREFIX_SCAN)]
    if not outbound_only:
        ids += [task.id for _, task in await _inbound(out, PREFIX_SCAN)]
    matches = sorted({task_id for task_id in ids if task_id.startswith(raw)})
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        listed = ", ".join(matches[:SHOWN_CANDIDATES])
        rest = len(matches) - SHOWN_CANDIDATES
        more = f" and {rest} more" if rest > 0 else ""
        fail(f"{shown(raw)} is the start of {len(matches)} task ids: {listed}{more}; "
             "give more of the id")
    return raw


def run_get(args: argparse.Namespace) -> int:
    with open_outbound(data_dir(args)) as out:
        return asyncio.run(_get(out, args))


async def _get(out: Outbound, args: argparse.Namespace) -> int:
    args.id = await _resolved(out, args.id, outbound_only=args.refresh)
    record = await out.delegator.store.get(args.id)
    if record is not None:
        if args.refresh:
            out.require_node_name()
            try:
                record = await out.delegator.refresh(record.id)
            except PeerError as exc:
                peer_failure(record.peer, exc)
        return _show_outbound(record, args.json)
    if args.refresh:
        fail(f"no outbound task {shown(args.id)} (--refresh asks a peer about a task this "
             "node delegated)", EXIT_NOT_FOUND)
    found = await _find_inbound(out, args.id)
    if found is None:
        _not_found(args.id)
    if args.json:
        print_json(_inbound_json(*found))
    else:
        _print_inbound(*found)
    return EXIT_OK


def _show_outbound(record: Delegation, as_json: bool) -> int:
    if as_json:
        print_json(record_json(record))
    else:
        print_record(record, f"outbound task (delegated to {record.peer})")
    return EXIT_OK


def run_follow(args: argparse.Namespace) -> int:
    with open_outbound(data_dir(args)) as out:
        return asyncio.run(_follow(out, args))


async def _follow(out: Outbound, args: argparse.Namespace) -> int:
    out.require_node_name()
    record = await out.delegator.store.get(await _resolved(out, args.id, outbound_only=True))
    if record is None:
        fail(f"no outbound task {shown(args.id)}", EXIT_NOT_FOUND)
    if record.state not in SETTLED:
        # It may have ended at the peer since this node last heard: ask once first, so a
        # task that is over is reported as it ended (a peer that does not answer now is
        # followed anyway: it may be restarting).
        with contextlib.suppress(PeerError):
            record = await out.delegator.refresh(record.id)
    if record.state in SETTLED:
        return finish(record, args.json, f"the task is {record_state(record)} at {record.peer}")
    try:
        record = await follow(out, record, args.timeout, args.json)
    except (KeyboardInterrupt, asyncio.CancelledError):
        return interrupted(record)
    return finish(record, args.json, "result")


def run_cancel(args: argparse.Namespace) -> int:
    with open_outbound(data_dir(args)) as out:
        return asyncio.run(_cancel(out, args))


async def _cancel(out: Outbound, args: argparse.Namespace) -> int:
    args.id = await _resolved(out, args.id)
    record = await out.delegator.store.get(args.id)
    if record is not None:
        return await _cancel_outbound(out, record, args.json)
    found = await _find_inbound(out, args.id)
    if found is None:
        _not_found(args.id)
    return await _cancel_inbound(out, found[0], found[1], args.json)


async def _cancel_outbound(out: Outbound, record: Delegation, as_json: bool) -> int:
    out.require_node_name()
    try:
        record = await out.delegator.cancel(record.id)
    except PeerRpcError as exc:
        code = EXIT_UNSUCCESSFUL if exc.code == TASK_NOT_CANCELABLE.code else EXIT_PEER
        fail(peer_error_line(record.peer, exc), code)
    except PeerError as exc:
        peer_failure(record.peer, exc)
    if as_json:
        print_json(record_json(record))
    else:
        print_record(record, f"canceled at {record.peer}" if record.state == TASK_STATE_CANCELED
                     else f"{record.peer} answered the cancel with state {record_state(record)}")
    return EXIT_OK if record.state == TASK_STATE_CANCELED else EXIT_UNSUCCESSFUL


async def _cancel_inbound(out: Outbound, peer: str, task: Task, as_json: bool) -> int:
    state = task.status.state
    if state in TERMINAL_STATES:
        fail(f"task {task.id} cannot be canceled: it is already {state}", EXIT_UNSUCCESSFUL)
    # The node's own service, so the rules and the downstream cancel are the node's.
    from synthorg.node import Node  # heavy: only this command needs it

    try:
        node = Node.build(out.directory)
    except ConfigError as exc:
        fail(str(exc))
    try:
        updated = task_v03(await node.tasks.cancel(peer, task.id))
    except TaskNotCancelable:
        fail(f"task {task.id} cannot be canceled: it is already final", EXIT_UNSUCCESSFUL)
    except TaskNotFound:
        fail(f"task {task.id} cannot be canceled: it is gone", EXIT_NOT_FOUND)
    except PeerError as exc:  # a forwarding agent could not cancel its downstream task
        downstream = await out.delegator.store.by_origin(task.id)
        line = peer_error_line(downstream.peer if downstream else "downstream", exc)
        fail(f"task {task.id} was not canceled: {line}", EXIT_PEER)
    finally:
        node.close()
    if as_json:
        print_json(_inbound_json(peer, updated))
    else:
        _print_inbound(peer, updated)
    return EXIT_OK if updated.status.state == STATE_CANCELED else EXIT_UNSUCCESSFUL


def _not_found(task_id: str) -> NoReturn:
    fail(f"no task {shown(task_id)}: neither a local (outbound) id nor an inbound task of "
         "a known peer (see: synthorg-a2a tasks list)", EXIT_NOT_FOUND)
