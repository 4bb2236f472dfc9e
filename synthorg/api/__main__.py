"""`python -m synthorg.api`: serve this node (same as `synthorg-a2a serve`)."""

from __future__ import annotations

import sys

from synthorg.api.serve import serve_from_env

if __name__ == "__main__":
    sys.exit(serve_from_env())
