"""Validate a card document against the bundled spec with jsonschema (2020-12).

The generated pydantic models validate what this node builds and reads on its hot path; this
is the independent check the CLI and the tests use, straight from spec/.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from synthorg.contract.spec import bundled_openapi

MAX_ISSUES = 20


@cache
def spec_validator(definition: str) -> Draft202012Validator:
    """A validator for one definition of the spec (e.g. "AgentCard"), refs resolved in-document."""
    schemas = bundled_openapi()["components"]["schemas"]
    if definition not in schemas:
        raise KeyError(f"the spec has no definition {definition!r}")
    return Draft202012Validator({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"#/components/schemas/{definition}",
        "components": {"schemas": schemas},
    })


def spec_issues(document: Any, definition: str = "AgentCard") -> list[str]:
    """Why `document` is not a valid `definition`, as "where: what" lines; [] when valid."""
    errors = sorted(spec_validator(definition).iter_errors(document), key=lambda e: e.json_path)
    return [f"{error.json_path}: {_short(error.message)}" for error in errors[:MAX_ISSUES]]


def _short(message: str, limit: int = 160) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."
