"""`python -m synthorg.api`: serve this node (same as `synthorg-a2a serve`, same options)."""

from __future__ import annotations

import sys

from synthorg.cli.serve_cmd import main

if __name__ == "__main__":
    sys.exit(main())
