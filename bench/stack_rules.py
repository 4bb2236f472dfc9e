"""Which part of the node a sampled stack is in: py-spy's raw lines to categories.

A raw line (`py-spy record --format raw --threads`) is one distinct stack of one thread,
outermost frame first, and how many samples had it:

    thread (4242): MainThread;_run_module_as_main (<frozen runpy>:198);...;read_body
    (synthorg/http/body.py:26) 2

A stack's category is decided by its innermost frame that a rule names (`RULES`, the first rule
matching that frame); a frame no rule names (the standard library's json, pydantic, a small
helper such as `synthorg/clock.py`) is charged to its nearest caller that one names. So json
encoding inside `replies.py` is the reply, pydantic inside `pipeline.py` is the validation,
and a model built in the store is the store's. Only the innermost frames need be right: a
stack read without pausing the node can be cut short at its outer end (the reader was
preempted while the stack changed), and such stacks are counted (`partial`).

Each thread's CPU time (from /proc) is shared among the categories of its own samples
(`charge`). py-spy keeps only the threads the OS shows running or runnable, so a thread just
woken is kept while it waits for the CPU or the GIL; a stack whose innermost frame is such a
wait (`IDLE`) is left out of the shares (py-spy's own check of these misses the qualified
names it prints, e.g. `Condition.wait`), unless the thread has no other sample: the event
line writer's CPU, mostly its wake-ups in the kernel, is then charged by where it waits.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

SERVER = "HTTP server + protocol (uvicorn, httptools, ours)"
LOOP = "event loop (uvloop, asyncio)"
GLUE = "ASGI glue (NodeApp, Observed, Gateway)"
GATES = "gates + rate limit + admission"
PARSE = "body read + JSON parse/validation"
HANDLER = "handler + task service"
STORE = "store"
REPLY = "reply (encode, ASGI send)"
EVENTS = "event lines (log.py, writer thread)"
OBSERVERS = "metrics + tracing observers"
OTHER = "other"
CATEGORIES = (SERVER, LOOP, GLUE, GATES, PARSE, HANDLER, STORE, REPLY, EVENTS, OBSERVERS, OTHER)

# (category, file pattern, function pattern), fnmatch-style, tried in order for each frame.
RULES: tuple[tuple[str, str, str], ...] = (
    (REPLY, "uvicorn/protocols/http/*", "RequestResponseCycle.send"),
    (REPLY, "synthorg/gateway/replies.py", "*"),
    (REPLY, "synthorg/http/responses.py", "*"),
    (REPLY, "synthorg/jsonrpc.py", "*"),
    (PARSE, "synthorg/http/body.py", "*"),
    (PARSE, "synthorg/gateway/pipeline.py", "*"),
    (PARSE, "synthorg/gateway/dialect.py", "*"),
    (SERVER, "synthorg/http/protocol.py", "*"),
    # In process (bench.inprocess_profile), the driver's scope, receive and send stand for
    # what a server does.
    (SERVER, "bench/inprocess_profile.py", "*"),
    (SERVER, "bench/pipeline.py", "call*"),
    (SERVER, "synthorg/http/server.py", "*"),
    (SERVER, "synthorg/http/limits.py", "*"),
    (SERVER, "uvicorn/*", "*"),
    (SERVER, "httptools/*", "*"),
    (GATES, "synthorg/gateway/gates.py", "*"),
    (GATES, "synthorg/gateway/ratelimit.py", "*"),
    (GATES, "synthorg/gateway/admission.py", "*"),
    (GATES, "synthorg/gateway/credential_index.py", "*"),
    # Gate 3's check that no peer presents the admin token (its stacks often read cut short).
    (GATES, "synthorg/admin/token.py", "AdminToken.matches"),
    (EVENTS, "synthorg/observability/log.py", "*"),
    (EVENTS, "synthorg/observability/writer.py", "*"),
    (EVENTS, "synthorg/observability/events/*", "*"),
    (OBSERVERS, "synthorg/observability/metrics.py", "*"),
    (OBSERVERS, "synthorg/observability/tally.py", "*"),
    (OBSERVERS, "synthorg/observability/tracing.py", "*"),
    (OBSERVERS, "synthorg/observability/activity.py", "*"),
    (OBSERVERS, "synthorg/admin/activity.py", "*"),
    (OBSERVERS, "prometheus_client/*", "*"),
    (OBSERVERS, "opentelemetry/*", "*"),
    (GLUE, "synthorg/web/*", "*"),
    (GLUE, "synthorg/observability/access.py", "*"),
    (GLUE, "synthorg/gateway/endpoint.py", "*"),
    (GLUE, "synthorg/gateway/context.py", "*"),
    (STORE, "synthorg/store/*", "*"),
    (STORE, "sqlite3/*", "*"),
    (HANDLER, "synthorg/dialects/*", "*"),
    (HANDLER, "synthorg/tasks/*", "*"),
    (HANDLER, "synthorg/gateway/dispatch.py", "*"),
    (HANDLER, "handlers/*", "*"),
    (LOOP, "asyncio/*", "*"),
    (LOOP, "uvloop/*", "*"),
)

# Innermost frames of a thread with nothing to do.
IDLE: tuple[tuple[str, str], ...] = (
    ("threading.py", "Condition.wait"),
    ("threading.py", "Event.wait"),
    ("selectors.py", "*.select"),
    ("queue.py", "Queue.get"),
    ("concurrent/futures/thread.py", "_worker"),  # a pool thread between work items
)

ROOTS = frozenset({"_run_module_as_main", "<module>", "Thread._bootstrap"})

_FRAME = re.compile(r"(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


@dataclass(frozen=True)
class Frame:
    function: str
    file: str


def parse_frame(text: str) -> Frame:
    """`func (path/to/file.py:12)`, the path as py-spy shortened it (to the package's), or
    what follows site-packages."""
    found = _FRAME.match(text)
    if found is None:
        return Frame(text, "")
    path = found["file"]
    if "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    return Frame(found["function"], path)


@dataclass(frozen=True)
class Stack:
    thread: int  # the OS thread id of py-spy's `thread (tid): name` frame, 0 without one
    frames: list[Frame]  # outermost first
    count: int


_THREAD = re.compile(r"thread \((0x[0-9a-fA-F]+|\d+)\)")


def parse_line(line: str) -> Stack | None:
    """One raw line (a `process ...` frame, from --subprocesses, dropped)."""
    text, _, count = line.rstrip("\n").rpartition(" ")
    if not text or not count.isdigit():
        return None
    thread, frames = 0, []
    for part in text.split(";"):
        if (found := _THREAD.match(part)) is not None:
            thread = int(found[1], 0)
        elif not part.startswith("process "):
            frames.append(parse_frame(part))
    return Stack(thread, frames, int(count))


def _matches(frame: Frame, file: str, function: str) -> bool:
    """`file` matches the frame's path or its end (a path py-spy did not shorten)."""
    return ((fnmatchcase(frame.file, file) or fnmatchcase(frame.file, "*/" + file))
            and fnmatchcase(frame.function, function))


def is_idle(frames: list[Frame]) -> bool:
    return bool(frames) and any(_matches(frames[-1], f, fn) for f, fn in IDLE)


def is_partial(frames: list[Frame]) -> bool:
    """Cut short: the outermost frame is not where a thread starts."""
    return not frames or frames[0].function not in ROOTS


NO_FRAME = "(no Python frame)"  # a thread in native code only, or a stack read as empty
NOT_SAMPLED = "(a thread never sampled, e.g. one that exited)"
Decided = tuple[str, str]  # (category, the frame that decided it: "function (file)")


def decide(frames: list[Frame]) -> Decided:
    """The category of the innermost frame a rule names, and that frame; "other" and the
    innermost frame when no rule names any."""
    for frame in reversed(frames):
        for name, file, function in RULES:
            if _matches(frame, file, function):
                return name, f"{frame.function} ({frame.file})"
    return OTHER, f"{frames[-1].function} ({frames[-1].file})" if frames else NO_FRAME


@dataclass
class Tally:
    """Samples per thread id, by what decided them; a waiting stack counted apart, by what
    its frames would decide."""

    kept: dict[int, Counter[Decided]] = field(default_factory=dict)
    waiting: dict[int, Counter[Decided]] = field(default_factory=dict)
    partial: int = 0  # of the kept samples, those whose stack was cut short

    def add(self, line: str) -> None:
        stack = parse_line(line)
        if stack is None:
            return
        idle = is_idle(stack.frames)
        into = (self.waiting if idle else self.kept).setdefault(stack.thread, Counter())
        into[decide(stack.frames)] += stack.count
        if not idle and is_partial(stack.frames):
            self.partial += stack.count

    def samples(self, thread: int | None = None, waiting: bool = False) -> int:
        """Samples kept (or waiting), of one thread or of all."""
        found = self.waiting if waiting else self.kept
        return sum(counts.total() for tid, counts in found.items()
                   if thread is None or tid == thread)


def tally(lines: list[str]) -> Tally:
    found = Tally()
    for line in lines:
        found.add(line)
    return found


def charge(found: Tally, cpu_us: dict[int, float]) -> dict[Decided, float]:
    """Each thread's CPU (µs per request, by thread id) shared in proportion to its kept
    samples, or to its waiting ones when it has none; a thread never sampled (e.g. one that
    exited) is "other"."""
    charged: dict[Decided, float] = {}
    for thread, us in cpu_us.items():
        counts = (found.kept.get(thread) or found.waiting.get(thread)
                  or Counter({(OTHER, NOT_SAMPLED): 1}))
        total = counts.total()
        for key, n in counts.items():
            charged[key] = charged.get(key, 0.0) + us * n / total
    return charged


def by_category(charged: dict[Decided, float]) -> dict[str, float]:
    parts: dict[str, float] = {}
    for (name, _), us in charged.items():
        parts[name] = parts.get(name, 0.0) + us
    return parts
