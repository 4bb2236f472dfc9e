"""Register peers in a node's connection catalog directly through the store.

This is what `synthorg-a2a peers add` does, minus the CLI: it opens the node's database in
the data dir, encrypts the secret with the data dir's key and writes one `a2a_peer` record.
The catalog is read on every request, so a record added while a node runs applies at once.
"""

from __future__ import annotations

from pathlib import Path

from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database

DEFAULT_ENDPOINT = "http://127.0.0.1:9"


def add_peer(
    data_dir: Path,
    name: str,
    secret: str,
    endpoint: str = DEFAULT_ENDPOINT,
    scheme: str = "api_key",
) -> bool:
    """Insert or replace the peer's record; True when it was created."""
    db = open_database(data_dir)
    try:
        return SqliteCatalog(db, SecretBox.for_data_dir(data_dir)).put(
            name, endpoint, scheme, secret
        )
    finally:
        db.close()


def remove_peer(data_dir: Path, name: str) -> bool:
    """Delete the peer's record; True when there was one."""
    db = open_database(data_dir)
    try:
        return SqliteCatalog(db, SecretBox.for_data_dir(data_dir)).remove(name)
    finally:
        db.close()
