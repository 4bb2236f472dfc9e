"""JSON-lines event emitter.

Every event is one JSON object on one line, written through the stdlib logger
``synthorg.events`` so tests and operators can attach their own handlers.
Logging is never allowed to break a request: every failure is swallowed. Nor to slow one
down: stderr's lines are queued for one writer thread (writer.py), which writes them in
batches; a request never waits for stderr.

Records of every other logger (uvicorn, Connexion, asyncio, Python warnings) reach the same
stream as ``server.log`` events once ``configure_logging`` has run: level, logger name and the
message, clipped; of an exception only its type, never a traceback.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from json.encoder import c_make_encoder  # type: ignore[attr-defined]
from json.encoder import encode_basestring_ascii as _quote
from typing import Any, TextIO

from synthorg.clock import utc_now
from synthorg.observability.events.server import SERVER_LOG
from synthorg.observability.writer import LineWriter

LOGGER_NAME = "synthorg.events"
_logger = logging.getLogger(LOGGER_NAME)

_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
# Defence in depth: callers must not pass these, but if one does the value never
# reaches a log line. Matched case-insensitively, at any nesting depth.
_REDACTED_KEYS = frozenset({"secret", "api_key", "token", "authorization", "password", "body"})
_REDACTED = "[redacted]"
_RESERVED = ("ts", "level", "event")
_MAX_DEPTH = 8
_SCALARS = (str, int, float, bool)
_SCALAR_TYPES = frozenset(_SCALARS)
_MAX_LIBRARY_MESSAGE = 512
# Library records below this level are dropped before they are formatted.
_LIBRARY_LEVEL = logging.WARNING


class _EventHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler: its lines go through one writer thread (writer.py), whether
    `emit` hands them over directly or through the logging chain."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.writer = LineWriter(stream)

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            _write(self, self.format(record))


class _LibraryHandler(logging.Handler):
    """On the root logger: another logger's record becomes a ``server.log`` event."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == LOGGER_NAME:
            return  # an event propagating up: already written
        with contextlib.suppress(Exception):
            fields: dict[str, object] = {
                "logger": record.name,
                "message": _clip(record.getMessage()),
            }
            if record.exc_info and record.exc_info[0] is not None:
                fields["exc_type"] = record.exc_info[0].__name__
            level = record.levelname.lower()
            emit(SERVER_LOG, level=level if level in _LEVELS else "warning", **fields)


def _clip(message: str) -> str:
    message = message.strip()
    if len(message) > _MAX_LIBRARY_MESSAGE:
        return message[:_MAX_LIBRARY_MESSAGE] + "…"
    return message


LOG_LEVEL_ENV = "SYNTHORG_LOG_LEVEL"


def log_level_from(raw: str | None) -> str:
    """A log level as configured (case-insensitive; unset or empty: info); ValueError naming
    the levels otherwise, so a typo is refused rather than quietly logged at info."""
    if raw is None or not raw.strip():
        return "info"
    level = raw.strip().lower()
    if level not in _LEVELS:
        raise ValueError(f"{raw!r} is not a log level ({', '.join(_LEVELS)})")
    return level


def configure_logging(level: str = "info") -> None:
    """Install the stderr handler once; later calls only adjust the level.

    Also routes every other logger's records (WARNING and above) and Python warnings through
    ``emit`` as ``server.log`` events, so stderr carries nothing but JSON event lines.
    """
    # Propagation stays on so pytest's caplog and host apps still see events; the root
    # handler skips them, so lines are not printed twice.
    _logger.setLevel(_LEVELS.get(level.lower(), logging.INFO))
    if not any(isinstance(h, _EventHandler) for h in _logger.handlers):
        handler = _EventHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        _logger.addHandler(handler)
        _install_exit_hooks()
    root = logging.getLogger()
    if not any(isinstance(h, _LibraryHandler) for h in root.handlers):
        library = _LibraryHandler(_LIBRARY_LEVEL)
        root.addHandler(library)
    # Every call, not only the first: a host (or a test) may have turned the capture off since.
    logging.captureWarnings(True)


def _scrub(value: object, depth: int = 0) -> object:
    if depth >= _MAX_DEPTH:
        return _safe_str(value)
    if isinstance(value, dict):
        return {
            k: _REDACTED if _is_sensitive(k) else _scrub(v, depth + 1) for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_scrub(v, depth + 1) for v in value]
    return value


def _is_sensitive(key: object) -> bool:
    if key in _PLAIN_KEYS:
        return False
    return isinstance(key, str) and key.lower() in _REDACTED_KEYS


# Field names the node's own events use, known not to be sensitive: no lower() for them.
_PLAIN_KEYS = frozenset({
    "method", "request_id", "peer_name", "task_id", "agent_id", "state", "reason", "status",
    "path", "error", "errors", "limit", "declared", "count", "client", "operation", "key",
    "duration_ms", "bytes_in", "bytes_out",
})


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return f"<unrepresentable {type(value).__name__}>"


_ENCODER = json.JSONEncoder(default=_safe_str)
# The C encoder json.dumps uses, built once: json.dumps rebuilds it (and a JSONEncoder) on
# every call, which is most of an event's cost. Same output: ", " and ": ", ASCII only.
_markers: dict[int, Any] = {}
_C_ENCODE = (
    None if c_make_encoder is None
    else c_make_encoder(_markers, _safe_str, _quote, None, ": ", ", ", False, False, True)
)


def _render(record: dict[str, Any]) -> str:
    """The record as one JSON object, exactly as `json.dumps` writes it."""
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(record, 0))
        except Exception:
            _markers.clear()  # an encoding cut short leaves its containers marked
    return _render_any(record)


def _render_any(record: dict[str, Any]) -> str:
    try:
        return _ENCODER.encode(record)
    except (TypeError, ValueError):
        # Non-string keys or reference cycles: flatten every field to text.
        flat = {str(k): v if isinstance(v, str) else _safe_str(v) for k, v in record.items()}
        return json.dumps(flat)


# Set by synthorg.observability.tracing when traces are on: the current span's ids, if any.
_trace_ids: Callable[[], tuple[str, str] | None] | None = None


def set_trace_ids(source: Callable[[], tuple[str, str] | None] | None) -> None:
    global _trace_ids
    _trace_ids = source


def emit(event: str, /, *, level: str = "info", **fields: object) -> None:
    """Log ``event`` with ``fields`` as one JSON line. Never raises."""
    # A plain try (cheaper than contextlib.suppress): a logging failure never takes a
    # request down.
    try:  # noqa: SIM105
        _emit(event, level, fields)
    except Exception:
        pass


def _emit(event: str, level: str, fields: dict[str, object]) -> None:
    levelno = _LEVELS.get(level)
    if levelno is None:
        level = level.lower() if level.lower() in _LEVELS else "info"
        levelno = _LEVELS[level]
    if not _logger.isEnabledFor(levelno):
        return
    record: dict[str, Any] = {"ts": utc_now(), "level": level, "event": event}
    for key, value in fields.items():
        if key in _PLAIN_KEYS and (value is None or type(value) in _SCALAR_TYPES):
            record[key] = value  # the common case: a known field, nothing to scrub
            continue
        # A field may not overwrite the envelope keys; keep it under a suffixed name.
        name = f"{key}_" if key in _RESERVED else key
        if _is_sensitive(key):
            record[name] = _REDACTED
        elif value is None or isinstance(value, _SCALARS):
            record[name] = value  # the common case: nothing nested to scrub
        else:
            record[name] = _scrub(value)
    if _trace_ids is not None and (ids := _trace_ids()) is not None:
        record["trace_id"], record["span_id"] = ids  # a log line joins its trace
    line = _render(record)
    handler = _sole_handler()
    if handler is not None:
        # Nobody else listens (no test capture, no host app): queue the line straight away;
        # a LogRecord and the handler chain would cost more than the rest of the event.
        _write(handler, line)
        return
    _logger.handle(logging.LogRecord(LOGGER_NAME, levelno, "", 0, line, None, None))


def _write(handler: _EventHandler, line: str) -> None:
    """Queue the line for the writer thread. On the main thread outside an event loop (the
    CLI, start-up, shutdown) wait until it is written, so it keeps its place among what the
    process prints to stderr itself."""
    handler.writer.put(line)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        if threading.current_thread() is threading.main_thread():
            handler.writer.flush()


def flush() -> None:
    """Wait (bounded) until every line queued so far is written: the process is about to end,
    perhaps by a signal raised again, with no exit handlers."""
    for handler in _logger.handlers:
        if isinstance(handler, _EventHandler):
            handler.writer.flush()


def dropped_lines() -> int:
    """Event lines this process dropped because stderr did not take them in time."""
    return sum(h.writer.dropped for h in _logger.handlers if isinstance(h, _EventHandler))


def watch_dropped_lines(callback: Callable[[int], None]) -> None:
    """`callback(total)` whenever a line is dropped (from whichever thread dropped it)."""
    for handler in _logger.handlers:
        if isinstance(handler, _EventHandler):
            handler.writer.on_drop = callback


def _flush_at_exit() -> None:
    with contextlib.suppress(Exception):
        flush()


def _flushing_hook(hook: Callable[..., Any]) -> Callable[..., Any]:
    def flush_then(*args: Any) -> Any:
        _flush_at_exit()  # the lines before the error, before its traceback
        return hook(*args)

    return flush_then


_exit_hooks: list[bool] = []


def _install_exit_hooks() -> None:
    """Once per process: the queued lines are written at exit and before an uncaught error's
    traceback; a forked child starts its own writer."""
    if _exit_hooks:
        return
    _exit_hooks.append(True)
    atexit.register(_flush_at_exit)
    sys.excepthook = _flushing_hook(sys.excepthook)
    os.register_at_fork(after_in_child=_after_fork)


def _after_fork() -> None:
    for handler in _logger.handlers:
        if isinstance(handler, _EventHandler):
            handler.writer.reset_after_fork()


def _sole_handler() -> _EventHandler | None:
    """Our stderr handler, when it and the library handler are the only ones listening."""
    handlers = _logger.handlers
    if len(handlers) != 1 or not isinstance(handlers[0], _EventHandler):
        return None
    if not _logger.propagate:
        return handlers[0]
    for handler in logging.root.handlers:
        if not isinstance(handler, _LibraryHandler):
            return None
    return None if _logger.filters else handlers[0]

