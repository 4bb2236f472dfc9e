"""Spelling spec names as Python names."""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# The A2A 1.0 operations, and the methods of this node's own extensions (spoken alike in
# either dialect), are served by `handlers/`; A2A 0.3's methods by its edge package.
HANDLERS = "handlers"
EDGE_V03 = "synthorg.dialects.v03"
# The namespaces of the extensions' JSON-RPC methods (`skills/query`): not A2A 0.3's.
EXTENSION_NAMESPACES = frozenset({"skills"})


def upper_snake(name: str) -> str:
    """`TaskNotFound` -> `TASK_NOT_FOUND`, `input-required` -> `INPUT_REQUIRED`."""
    return re.sub(r"[^A-Za-z0-9]+", "_", _BOUNDARY.sub("_", name)).strip("_").upper()


def method_module(method: str) -> str:
    """A method's module name: a JSON-RPC path `tasks/get` -> `tasks_get`, a 1.0 operation
    `SendMessage` -> `send_message`."""
    if "/" in method:
        return method.replace("/", "_")
    return _BOUNDARY.sub("_", method).lower()


def handler_package(method: str) -> str:
    """The package of the module whose `handle` serves a method: `handlers` for a 1.0
    operation or an extension's method, the 0.3 edge for an A2A 0.3 method."""
    if "/" in method and method.split("/", 1)[0] not in EXTENSION_NAMESPACES:
        return EDGE_V03
    return HANDLERS


def handler_module(method: str) -> str:
    """The dotted module whose `handle` serves a method: `GetTask` -> `handlers.get_task`,
    `tasks/get` -> `synthorg.dialects.v03.tasks_get`, `skills/query` ->
    `handlers.skills_query`."""
    return f"{handler_package(method)}.{method_module(method)}"
