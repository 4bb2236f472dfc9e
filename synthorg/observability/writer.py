"""Event lines off the request's path: a bounded queue and one writer thread.

`put` only appends a rendered line to a queue (no write, no lock; the first line after a
batch sets an event that wakes the writer); a thread of its own takes everything queued,
encodes it once and writes it in one call, at most once per `WINDOW` unless a flush waits (a
burst of lines, from many requests, is one write). A stream nobody reads (a full
pipe) blocks only that thread: the queue is bounded, and a line that finds it full is
dropped and counted (`dropped`, the `synthorg_event_lines_dropped_total` metric).

`flush` waits (bounded) until every line queued before it is written: a clean stop, an
uncaught error and the end of the process call it, so only a kill -9 can lose lines, those of
the last window at most.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import TextIO

WINDOW = 0.002  # seconds a woken writer waits for more lines, so that a burst is one write
MAX_QUEUED = 10_000  # lines waiting; beyond that a line is dropped and counted
STOP_WAIT = 2.0  # seconds a stop waits for a stuck stream before it gives up on the lines


class _Flushed(threading.Event):
    """A marker in the queue: set once every line queued before it is written."""


class LineWriter:
    def __init__(self, stream: TextIO, window: float | None = None,
                 limit: int | None = None) -> None:
        self.stream = stream
        self._window = WINDOW if window is None else window  # the module's, when made
        self._limit = MAX_QUEUED if limit is None else limit
        self._queue: deque[str | _Flushed] = deque()
        self._wake = threading.Event()  # something is queued
        self._hurry = threading.Event()  # someone waits: no window
        self._armed = False  # the writer was woken and has not taken the queue yet
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._drop_lock = threading.Lock()  # only a full queue takes it
        self._flush_lock = threading.Lock()
        self._flushes = 0  # markers queued and not yet written past
        self.dropped = 0
        self.on_drop: Callable[[int], None] | None = None  # told the total at each drop

    def put(self, line: str) -> None:
        """Queue one line (without its newline). Never blocks; drops it when the queue is full."""
        queue = self._queue
        if len(queue) >= self._limit:
            with self._drop_lock:
                self.dropped += 1
                if self.on_drop is not None:
                    with contextlib.suppress(Exception):
                        self.on_drop(self.dropped)
            return
        queue.append(line)
        # Appended first, then the flag read: a writer that cleared it takes this line later.
        if not self._armed:
            self._armed = True
            self._start()
            self._wake.set()

    def flush(self, timeout: float | None = STOP_WAIT) -> bool:
        """Wait until every line queued so far is written; False if the stream did not take
        them within `timeout` (they stay queued)."""
        if self._thread is None and not self._queue:
            return True
        marker = _Flushed()
        with self._flush_lock:  # `hurry` is set while a flush waits, and only then
            self._flushes += 1
            self._queue.append(marker)
            self._hurry.set()
        self._start()
        self._armed = True
        self._wake.set()
        return marker.wait(timeout)

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="synthorg-events", daemon=True)
                thread.start()
                self._thread = thread

    def _run(self) -> None:
        wake, hurry = self._wake, self._hurry
        while True:
            wake.wait()
            wake.clear()
            self._armed = False
            if self._window:
                hurry.wait(self._window)  # gather the rest of the burst, unless asked to flush
            self._drain()

    def _drain(self) -> None:
        queue = self._queue
        lines: list[str] = []
        markers: list[_Flushed] = []
        for _ in range(len(queue)):
            item = queue.popleft()
            if type(item) is str:
                lines.append(item)
            else:
                markers.append(item)  # type: ignore[arg-type]
        if lines:
            self._write(lines)
        if markers:
            with self._flush_lock:
                self._flushes -= len(markers)
                if not self._flushes:
                    self._hurry.clear()
            for marker in markers:
                marker.set()

    def _write(self, lines: list[str]) -> None:
        lines.append("")  # the last line's newline
        text = "\n".join(lines)
        stream = self.stream
        # A failing stream (closed, gone) loses these lines and nothing else.
        with contextlib.suppress(Exception):
            raw = getattr(stream, "buffer", None)
            if raw is None:
                stream.write(text)
                stream.flush()
                return
            raw.write(text.encode("utf-8", "replace"))  # encoded once, written in one call
            raw.flush()

    def reset_after_fork(self) -> None:
        """In a forked child: the writer thread was not copied; start afresh."""
        self._thread = None
        self._start_lock = threading.Lock()
        self._drop_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._flushes = 0
        self._wake = threading.Event()
        self._hurry = threading.Event()
        self._armed = False
        self._queue.clear()  # the parent writes its own lines
