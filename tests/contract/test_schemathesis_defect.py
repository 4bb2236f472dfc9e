"""The Schemathesis defect the contract runs work around (docs/schemathesis.md), pinned.

The first test shows the defect is still in the pinned release: when it fails, a release
fixed it, and `before_generate_body` in support.py can go. The others hold the workaround to
what it claims: only that defect's refusal is turned into a rejected example.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.jsonschema import CANONICALIZE_DRAFT_BY_VALIDATOR
from schemathesis.generation.jsonschema.builder import build

from tests.contract.support import UNBUILDABLE, before_generate_body

DRAFT = CANONICALIZE_DRAFT_BY_VALIDATOR[jsonschema_rs.Draft202012Validator]
DEFS = {
    "parts": {"type": "array", "items": {"$ref": "#/$defs/part"}},
    "part": {"allOf": [{"$ref": "#/$defs/data_part"}, {"properties": {"kind": {"enum": ["d"]}}}]},
    "data_part": {"type": "object", "properties": {"data": {"$ref": "#/$defs/data"}}},
    "data": {"type": "object", "additionalProperties": {"$ref": "#/$defs/text"}},
    "text": {"type": "string"},
    # What negative generation makes of a closed object: anything it does not accept.
    "not_a_message": {
        "type": "object", "required": ["parts"],
        "properties": {"parts": {"$ref": "#/$defs/parts"}},
        "not": {"additionalProperties": False, "properties": {"parts": {"$ref": "#/$defs/parts"}}},
    },
}
INSTANCE = {"parts": [], "extra": 1}  # the schema is satisfiable: this is one of its values


def test_the_pinned_schemathesis_refuses_a_satisfiable_schema_behind_a_ref() -> None:
    inline = {**DEFS["not_a_message"], "$defs": DEFS}
    behind_a_ref = {"$ref": "#/$defs/not_a_message", "$defs": DEFS}
    for schema in (inline, behind_a_ref):
        assert jsonschema_rs.validator_for(schema).is_valid(INSTANCE)
    assert not build(inline, draft=DRAFT, formats={}).is_empty
    with pytest.raises(InvalidSchema, match=UNBUILDABLE):
        build(behind_a_ref, draft=DRAFT, formats={})


def unbuildable(_: Any) -> Any:
    raise InvalidSchema("Cannot generate an array with 1 demanded elements")


def test_a_body_the_generator_cannot_build_is_a_rejected_example() -> None:
    bodies = before_generate_body(None, st.one_of(st.just("built"), st.none().map(unbuildable)))
    seen = []

    @settings(max_examples=30, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(bodies)
    def draw(body: str) -> None:
        seen.append(body)

    draw()
    assert seen and set(seen) == {"built"}


def test_any_other_generation_error_still_fails_the_run() -> None:
    other = before_generate_body(None, st.none().map(lambda _: _refused()))

    @settings(max_examples=5, database=None, derandomize=True)
    @given(other)
    def draw(body: Any) -> None:
        pass

    with pytest.raises(InvalidSchema, match="some other reason"):
        draw()


def _refused() -> Any:
    raise InvalidSchema("some other reason")


def test_every_contract_schema_carries_the_workaround() -> None:
    loaded = schemathesis.openapi.from_dict({"openapi": "3.1.0", "info": {"title": "t",
                                             "version": "1"}, "paths": {}})
    assert not loaded.hooks.get_all_by_name("before_generate_body")
    from tests.contract.support import load_schema

    assert load_schema().hooks.get_all_by_name("before_generate_body") == [before_generate_body]
