"""Private files and directories: mode 0600 / 0700, and a small private file (a key, a token)
published exactly once, even when processes race."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) if missing; a directory we create gets mode 0700."""
    try:
        path.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        if not path.is_dir():
            raise
        return
    os.chmod(path, 0o700)  # mkdir's mode is filtered through the umask


def ensure_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 unless it exists; tighten an existing one to 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def publish_once(path: Path, content: bytes) -> bool:
    """Write `content` to `path` (mode 0600) unless it exists; True when ours won.

    The content is written and fsynced under a private temporary name, then hard-linked into
    place: link() never replaces, so of two racing processes exactly one wins, and nobody can
    read a half-written file. The loser reads the winner's file.
    """
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(path.parent)
    return True


def read_private_file(path: Path) -> bytes | None:
    """The file's stripped content, or None when it does not exist; a file others can read
    is tightened to 0600 (a read-only mount is left as the operator made it)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)
    return data.strip()


def _fsync_dir(path: Path) -> None:
    # Make the new directory entry durable; not every platform can open a directory.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
