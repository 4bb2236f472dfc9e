"""An operator's agent: `executor: {kind: python, entrypoint: "pkg.mod:factory", options}`.

The factory is imported and called once at start with the options (a dict, empty when none
were given) and returns the agent's executor (`synthorg.tasks.executors.Executor`). Anything
wrong (no such module or name, the factory raising, a result without `run`) is one
`PluginError` naming the agent, which start-up prints as one line.

Where modules are found (`add_import_roots`): first the config's `python_path` entries, in
order (relative ones from the config file's directory), ahead of installed packages as
PYTHONPATH would put them; then, after installed packages so they never shadow one, the data
dir and the working directory. So `entrypoint: examples.slow_writer:factory` loads under
`synthorg-a2a serve` started from the directory holding `examples/`, as it does under
`python -m`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from synthorg.tasks.executors import Executor


class PluginError(Exception):
    """An agent's executor could not be loaded; the message names the agent."""


def add_import_roots(python_path: Sequence[str], config_dir: Path) -> None:
    """Make the operator's modules importable (see the module docstring); idempotent."""
    explicit = [str((config_dir / entry).resolve()) for entry in python_path]
    for entry in reversed(explicit):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    for fallback in (str(config_dir.resolve()), os.getcwd()):
        if fallback not in sys.path:
            sys.path.append(fallback)
    importlib.invalidate_caches()


def load_executor(agent_id: str, entrypoint: str, options: Mapping[str, Any] | None) -> Executor:
    def fail(problem: str) -> PluginError:
        return PluginError(
            f"agent {agent_id!r}: executor entrypoint {entrypoint!r} {problem}"
        )

    module_name, _, attribute = entrypoint.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import may fail in any way the operator's code does
        raise fail(f"cannot be imported: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise fail(f"names nothing callable in module {module_name!r}")
    try:
        executor = factory(dict(options or {}))
    except Exception as exc:
        raise fail(f"failed when called: {type(exc).__name__}: {exc}") from None
    run = getattr(executor, "run", None)
    if not inspect.iscoroutinefunction(run) or not callable(getattr(executor, "cancel", None)):
        raise fail("returned no executor (async run(task, message, progress) and cancel(task))")
    if not isinstance(getattr(executor, "pure", False), bool):
        raise fail("returned an executor whose pure is not a bool")
    if not hasattr(executor, "pure"):
        try:
            executor.pure = False  # an operator's agent is assumed to have effects
        except AttributeError:
            raise fail("returned an executor without pure that cannot take one") from None
    return cast(Executor, executor)
