"""`python -m codegen [--check]`: write (or verify) the generated models, constants and dispatch
table, and the gRPC modules of the vendored A2A 1.0 proto."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from pathlib import Path

from codegen import fingerprint
from codegen.constants import UNION_V1, methods, render_constants
from codegen.dispatch import render_dispatch
from codegen.models import render_models
from codegen.naming import handler_module
from codegen.protos import render_grpc

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = {
    ROOT / "synthorg" / "generated" / "models.py": render_models,
    ROOT / "synthorg" / "generated" / "constants.py": render_constants,
    ROOT / "synthorg" / "gateway" / "dispatch.py": render_dispatch,
}


def _fingerprint() -> tuple[Path, str, list[str]]:
    path = ROOT / "spec" / "fingerprint.json"
    recorded = json.loads(path.read_text()) if path.exists() else None
    return path, *fingerprint.render(recorded, ROOT)


def _missing_handlers() -> list[str]:
    problems = []
    for method, _ in methods() + methods(UNION_V1):
        module_name = handler_module(method)
        path = ROOT.joinpath(*module_name.split(".")).with_suffix(".py")
        if not path.exists():
            problems.append(f"{method}: no handler module {path.relative_to(ROOT)}")
            continue
        module = importlib.import_module(module_name)
        handle = getattr(module, "handle", None)
        is_async = inspect.iscoroutinefunction(handle) or inspect.isasyncgenfunction(handle)
        if handle is None or not is_async:
            problems.append(f"{method}: {path.relative_to(ROOT)} has no `async def handle`")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if output is stale")
    args = parser.parse_args(argv)
    rendered = {path: render() for path, render in OUTPUTS.items()}
    rendered.update(render_grpc(ROOT))  # the gRPC binding's modules, from spec/proto
    fingerprint_path, rendered[fingerprint_path], version_problems = _fingerprint()
    if args.check:
        stale = [p for p, text in rendered.items() if not p.exists() or p.read_text() != text]
        problems = [f"stale: {p.relative_to(ROOT)} (run `python -m codegen`)" for p in stale]
        problems += version_problems + _missing_handlers()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    if version_problems:
        for problem in version_problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    for path, text in rendered.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    missing = _missing_handlers()
    for problem in missing:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
