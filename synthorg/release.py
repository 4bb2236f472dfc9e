"""This installation's release, for `--version`, the admin status and wherever else it is shown."""

from __future__ import annotations

from importlib import metadata


def release() -> str:
    """The installed synthorg-a2a version ("unknown" when run from an uninstalled tree)."""
    try:
        return metadata.version("synthorg-a2a")
    except metadata.PackageNotFoundError:
        return "unknown"
