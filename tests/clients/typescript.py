"""The TypeScript client package (clients/typescript) as the tests drive it: its npm
dependencies installed once per package-lock.json, its generator, its compiler and its tests.

Node.js and npm come from the machine. Without them the tests are skipped, except in CI
(`CI=true`), where they fail: the published client is part of what CI proves.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
GENERATED = PACKAGE / "src" / "generated"
# `npm ci` writes the sha256 of the lock file it installed here (so does `make client-ts-deps`).
STAMP = PACKAGE / "node_modules" / ".synthorg-lock-sha256"
TIMEOUT = 300


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = f"{name} is not on PATH: the TypeScript client needs Node.js 20+ and npm"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def run(*args: str, env: dict[str, str] | None = None, timeout: int = TIMEOUT,
        check: bool = True, cwd: Path = PACKAGE) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})}, check=False,
    )
    if check and result.returncode != 0:
        output = f"{result.stdout}\n{result.stderr}"
        pytest.fail(f"{' '.join(args)} exited {result.returncode}:\n{output}")
    return result


def lock_digest() -> str:
    return hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()


def ensure_dependencies() -> None:
    """`npm ci` unless node_modules already holds what package-lock.json pins."""
    tool("node")
    npm = tool("npm")
    digest = lock_digest()
    if STAMP.is_file() and STAMP.read_text().strip() == digest:
        return
    run(npm, "ci", "--no-audit", "--no-fund")
    STAMP.write_text(digest + "\n")


def tsc(*args: str) -> subprocess.CompletedProcess[str]:
    return run(tool("node"), str(PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"), *args)


def generate(spec: Path, out: Path) -> None:
    run(tool("node"), "scripts/generate.mjs", "--spec", str(spec), "--out", str(out))
