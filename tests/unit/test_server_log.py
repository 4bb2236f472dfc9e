"""Records of uvicorn, Connexion and other libraries reach stderr as `server.log` event lines:
level, logger and a clipped message, an exception by its type only, never a traceback."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from synthorg.observability import log

# Not uvicorn's own loggers: another test in this process may have given them handlers of their
# own (uvicorn's default log config); the live node's are covered by test_hostile_http.py.
LIBRARY = "tests.some_library"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def routed() -> Iterator[Lines]:
    """configure_logging as the node runs it, undone afterwards; the event lines captured."""
    events_logger, root = logging.getLogger(log.LOGGER_NAME), logging.getLogger()
    before_events, before_root = list(events_logger.handlers), list(root.handlers)
    level = events_logger.level
    capture = Lines()
    events_logger.addHandler(capture)
    library = logging.getLogger(LIBRARY)
    library.setLevel(logging.DEBUG)  # whatever the root's level: the handler's level decides
    log.configure_logging("info")
    try:
        yield capture
    finally:
        for logger, before in ((events_logger, before_events), (root, before_root)):
            for handler in [h for h in logger.handlers if h not in before]:
                logger.removeHandler(handler)
        events_logger.setLevel(level)
        logging.captureWarnings(False)


def test_a_library_record_becomes_one_server_log_event(routed: Lines) -> None:
    logging.getLogger(LIBRARY).warning("Invalid HTTP request received.")
    [event] = routed.events()
    assert event["event"] == "server.log"
    assert event["level"] == "warning"
    assert event["logger"] == LIBRARY
    assert event["message"] == "Invalid HTTP request received."


def test_an_exception_is_reported_by_type_without_a_traceback(routed: Lines) -> None:
    try:
        raise ValueError("request data LEAKCHECK-81f2")
    except ValueError:
        logging.getLogger(LIBRARY).exception("Exception in ASGI application\n")
    [line] = routed.lines
    event = json.loads(line)
    assert event["exc_type"] == "ValueError"
    assert event["message"] == "Exception in ASGI application"
    assert event["level"] == "error"
    assert "LEAKCHECK" not in line and "Traceback" not in line


def test_library_records_below_warning_are_dropped_and_long_messages_clipped(
    routed: Lines,
) -> None:
    logging.getLogger(LIBRARY).info("chatter")
    logging.getLogger(LIBRARY).error("x" * 5000)
    [event] = routed.events()
    assert len(event["message"]) <= 520


def test_events_are_not_written_twice_and_warnings_are_events(routed: Lines) -> None:
    log.emit("t.once", n=1)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a library warns", UserWarning, stacklevel=1)
    names = [event["event"] for event in routed.events()]
    assert names == ["t.once", "server.log"]
    assert routed.events()[1]["logger"] == "py.warnings"
