"""Spelling spec names as Python names."""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def upper_snake(name: str) -> str:
    """`TaskNotFound` -> `TASK_NOT_FOUND`, `input-required` -> `INPUT_REQUIRED`."""
    return re.sub(r"[^A-Za-z0-9]+", "_", _BOUNDARY.sub("_", name)).strip("_").upper()


def handler_module(method: str) -> str:
    """The handler module of a JSON-RPC method: `tasks/get` -> `tasks_get`."""
    return method.replace("/", "_")


def adapter_function(method: str) -> str:
    """The 1.0 dialect's adapter of a method (synthorg/dialects/v1.py): `SendMessage` ->
    `send_message`."""
    return _BOUNDARY.sub("_", method).lower()
