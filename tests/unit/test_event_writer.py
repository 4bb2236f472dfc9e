"""The event line writer (synthorg/observability/writer.py) on real files and pipes: a burst of
lines is one write system call, order is kept, and a pipe nobody reads never blocks the
caller: the queue is bounded and what does not fit is dropped and counted."""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.observability.writer import LineWriter

NEVER = 3600.0  # a window no test waits out: only a flush ends it


class CountingFileIO(io.FileIO):
    """A real file descriptor that counts the write system calls made on it."""

    writes = 0

    def write(self, data: object) -> int:  # type: ignore[override]
        self.writes += 1
        return super().write(data)  # type: ignore[arg-type]


def text_stream(raw: io.FileIO) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", line_buffering=True)


@pytest.fixture
def counted_file(tmp_path: Path) -> Iterator[tuple[CountingFileIO, Path]]:
    path = tmp_path / "events.log"
    raw = CountingFileIO(path, "w")
    try:
        yield raw, path
    finally:
        raw.close()


def test_a_burst_of_lines_is_one_write(counted_file: tuple[CountingFileIO, Path]) -> None:
    raw, path = counted_file
    writer = LineWriter(text_stream(raw), window=NEVER)
    lines = [f'{{"event": "t.burst", "n": {i}}}' for i in range(1000)]
    for line in lines:
        writer.put(line)
    assert writer.flush(timeout=30)
    assert raw.writes == 1
    assert path.read_text().splitlines() == lines
    assert writer.dropped == 0


def test_lines_of_many_requests_on_a_loop_are_one_write_per_batch(
    counted_file: tuple[CountingFileIO, Path],
) -> None:
    """2000 lines queued by tasks of one event loop (50 requests at a time, 4 lines each,
    a loop turn between them), each batch flushed: one write per batch, every request's lines
    in the order it queued them."""
    raw, path = counted_file
    writer = LineWriter(text_stream(raw), window=NEVER)

    async def requests() -> None:
        async def one(i: int) -> None:
            for step in range(4):
                writer.put(f'{{"request": {i}, "step": {step}}}')
                await asyncio.sleep(0)

        for start in range(0, 500, 50):
            await asyncio.gather(*(one(i) for i in range(start, start + 50)))
            assert writer.flush(timeout=30)

    asyncio.run(requests())
    written = path.read_text().splitlines()
    assert len(written) == 2000
    assert raw.writes == 10
    steps: dict[str, list[str]] = {}
    for line in written:
        request, step = line.split(", ")
        steps.setdefault(request, []).append(step)
    assert all(s == ['"step": 0}', '"step": 1}', '"step": 2}', '"step": 3}']
               for s in steps.values())


def test_lines_from_several_threads_all_arrive(counted_file: tuple[CountingFileIO, Path]) -> None:
    raw, path = counted_file
    writer = LineWriter(text_stream(raw))

    def produce(name: str) -> None:
        for i in range(500):
            writer.put(f"{name} {i}")

    threads = [threading.Thread(target=produce, args=(f"t{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert writer.flush(timeout=30)
    written = path.read_text().splitlines()
    for k in range(4):
        mine = [line for line in written if line.startswith(f"t{k} ")]
        assert mine == [f"t{k} {i}" for i in range(500)]


def fill(fd: int) -> int:
    """Fill a pipe to capacity without blocking; the bytes written."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    total = 0
    try:
        while True:
            total += os.write(fd, b"\0" * 4096)
    except BlockingIOError:
        pass
    finally:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)
    return total


def test_a_stuck_pipe_drops_and_counts_without_blocking() -> None:
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "w", encoding="utf-8")
    try:
        prefill = fill(write_fd)  # nobody reads: every write now blocks
        writer = LineWriter(stream, limit=100)
        for i in range(300):
            writer.put(f"line {i}")  # returns at once, pipe or no pipe
        # The writer thread holds at most one batch (at most the queue's 100) in its blocked
        # write; the queue holds at most 100 more: the rest was dropped.
        assert writer.dropped >= 100
        assert not writer.flush(timeout=0.01)  # a bounded wait: the lines are still owed

        received = bytearray()

        def read_all() -> None:
            while chunk := os.read(read_fd, 65536):
                received.extend(chunk)

        reader = threading.Thread(target=read_all)
        reader.start()  # the pipe drains: what was kept is written
        assert writer.flush(timeout=30)
        stream.close()
        reader.join()
    finally:
        os.close(read_fd)
    lines = bytes(received[prefill:]).decode().splitlines()
    # Every line is either written (in order) or counted as dropped.
    assert len(lines) + writer.dropped == 300
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == sorted(numbers)
    assert numbers[0] == 0
