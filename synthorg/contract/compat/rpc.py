"""The JSON-RPC operation of a document: each method's request envelope and the variants
of its result union."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from synthorg.contract.compat.document import (
    Document,
    Unresolvable,
    allowed_values,
    const_of,
    properties_of,
    ref_name,
    union_variants,
)
from synthorg.contract.compat.report import SpecShapeError
from synthorg.generated.constants import (
    GATEWAY_RPC,
    MEDIA_TYPE_APPLICATION_JSON,
    RESULT_DEFINITIONS,
    RESULT_DEFINITIONS_V1,
)

RPC_PATH = GATEWAY_RPC.path
# Which of our result definitions each of our methods returns (the spec's <Name>Result).
RESULTS: Mapping[str, str] = {**RESULT_DEFINITIONS, **RESULT_DEFINITIONS_V1}
_UNION_RESULTS = frozenset(RESULTS.values())


@dataclass(frozen=True)
class Rpc:
    requests: dict[str, Any]  # method -> request envelope schema (unresolved)
    results: list[tuple[str | None, Any]]  # (definition name, schema) of each result variant


def _rpc_operation(document: Document) -> Mapping[str, Any] | None:
    paths = document.raw.get("paths")
    if not isinstance(paths, Mapping):
        return None
    for path in (RPC_PATH, RPC_PATH.rstrip("/")):
        item = paths.get(path)
        if isinstance(item, Mapping):
            try:
                item, _ = document.resolve(item)
            except Unresolvable:
                return None
            post = item.get("post") if isinstance(item, Mapping) else None
            if isinstance(post, Mapping):
                return post
    return None


def _json_schema_of(document: Document, holder: Any) -> Any:
    """The application/json schema of a request body or response (after `$ref`s)."""
    resolved, _ = document.resolve(holder)
    if not isinstance(resolved, Mapping):
        return None
    content = resolved.get("content")
    if not isinstance(content, Mapping):
        return None
    for media_type, entry in content.items():
        plain = str(media_type).split(";")[0].strip().lower()
        if plain == MEDIA_TYPE_APPLICATION_JSON and isinstance(entry, Mapping):
            return entry.get("schema")
    return None


def _flatten(document: Document, schema: Any) -> Iterator[tuple[str | None, Any]]:
    """(definition name, schema) of each variant of a union, nested unions flattened."""
    resolved, ref = document.resolve(schema)
    if not isinstance(resolved, Mapping):
        return
    variants = union_variants(resolved)
    # A union that is itself a method's result (V1SendMessageResult) stays whole.
    if variants is None or ref_name(ref) in _UNION_RESULTS:
        yield ref_name(ref), schema
        return
    for variant in variants:
        yield from _flatten(document, variant)


def _envelopes(document: Document, envelope: Any) -> Iterator[tuple[str, Any]]:
    """(method, request schema) for one member of a request union: its `method`'s const or
    enum; else, for a generic envelope (`method` any string), one per member of its params
    union whose own `method` is a const (as in our RpcParams), with params narrowed to it."""
    resolved, _ = document.resolve(envelope)
    if not isinstance(resolved, Mapping):
        return
    props = properties_of(resolved)
    method, _ = document.resolve(props.get("method"))
    values = allowed_values(method) if isinstance(method, Mapping) else None
    if values:
        for value in sorted(values):
            name = json.loads(value)
            if isinstance(name, str):
                yield name, envelope
        return
    if "params" not in props:
        return
    for _, params in _flatten(document, props["params"]):
        const = const_of(params, document, "method")
        name = json.loads(const) if const is not None else None
        if isinstance(name, str):
            narrowed = {"const": name}
            yield name, {**resolved, "properties": {**props, "method": narrowed, "params": params}}


def read_rpc(document: Document, whose: str) -> Rpc:
    operation = _rpc_operation(document)
    if operation is None:
        raise SpecShapeError(f"{whose} spec has no POST {RPC_PATH} operation")
    body = _json_schema_of(document, operation.get("requestBody"))
    if body is None:
        raise SpecShapeError(f"{whose} POST {RPC_PATH} has no application/json request body")
    requests: dict[str, Any] = {}
    for _, variant in _flatten(document, body):
        for name, schema in _envelopes(document, variant):
            requests.setdefault(name, schema)
    results: list[tuple[str | None, Any]] = []
    responses = operation.get("responses")
    ok = _json_schema_of(document, responses.get("200")) if isinstance(responses, Mapping) else None
    if ok is not None:
        for _, response in _flatten(document, ok):
            resolved, _ = document.resolve(response)
            result = (
                properties_of(resolved).get("result") if isinstance(resolved, Mapping) else None
            )
            if result is not None:
                results.extend(_flatten(document, result))
    return Rpc(requests, results)

