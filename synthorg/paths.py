"""Where a node keeps its data: `SYNTHORG_DATA_DIR`, else `./synthorg-data`.

Kept free of heavy imports so the CLI starts fast.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DATA_DIR = "./synthorg-data"


def data_dir_from_env() -> Path:
    return Path(os.environ.get("SYNTHORG_DATA_DIR") or DEFAULT_DATA_DIR)
