"""Is a peer's published contract compatible with ours? (`synthorg-a2a spec check`)

This node is the caller: for each JSON-RPC method of our contract the comparison asks whether
the peer's OpenAPI document offers it on the path our client calls (``POST /api/v1/a2a/``),
whether the peer accepts the request we send (envelope and params: every member the peer
requires is one we send, every member we send is one the peer knows or tolerates, types and
``const``/``enum`` values overlap, lengths and ranges fit), and whether we can read the result
the peer returns (every member we require is there, nothing the peer sends is refused by our
strict models, types and values fit).

Each difference is a `Finding`: an ``error`` means some call will fail, a ``warning`` means
some calls may (a value range narrower on one side, an optional member the other side
requires, a method of the SynthOrg skills extension the peer lacks). Only local ``#/...``
references are followed; a published document is bundled, so that is all a peer should need.

OpenAPI has no place for "method X returns result Y" in a JSON-RPC union; our spec names it
(`<Name>Params` answers `<Name>Result`, generated as `RESULT_DEFINITIONS`), and the peer's
result is the member of its result union with the same name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from synthorg.generated.constants import (
    AGENT_GET_AUTHENTICATED_EXTENDED_CARD,
    MESSAGE_STREAM,
    METHODS_V1,
    RESULT_DEFINITIONS,
    RESULT_DEFINITIONS_V1,
    RPC_POST,
    SKILLS_NEGOTIATE,
    SKILLS_QUERY,
    TASKS_PUSH_NOTIFICATION_CONFIG_DELETE,
    TASKS_PUSH_NOTIFICATION_CONFIG_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_LIST,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET,
    TASKS_RESUBSCRIBE,
)

Severity = Literal["error", "warning"]
Status = Literal["ok", "warning", "incompatible", "-"]

RPC_PATH = RPC_POST.path
# Which of our result definitions each of our methods returns (the spec's <Name>Result).
RESULTS: Mapping[str, str] = {**RESULT_DEFINITIONS, **RESULT_DEFINITIONS_V1}
# A peer may lack these and still take delegated tasks: they are an optional extension.
# The SynthOrg skills extension, streaming and push notifications (a task is then followed
# by polling): a peer without them is still compatible, with a warning; so is a peer without
# the extended card or the 1.0 dialect (it is called in 0.3).
OPTIONAL_METHODS = frozenset({
    SKILLS_QUERY, SKILLS_NEGOTIATE, MESSAGE_STREAM, TASKS_RESUBSCRIBE,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET, TASKS_PUSH_NOTIFICATION_CONFIG_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_LIST, TASKS_PUSH_NOTIFICATION_CONFIG_DELETE,
    AGENT_GET_AUTHENTICATED_EXTENDED_CARD, *METHODS_V1,
})
_UNION_RESULTS = frozenset(RESULTS.values())

_RANGES = (
    ("minLength", "maxLength", "characters"),
    ("minItems", "maxItems", "items"),
    ("minProperties", "maxProperties", "members"),
    ("minimum", "maximum", ""),
)
_MAX_DEPTH = 64
_MAX_COMPARISONS = 20000
_MAX_REF_CHAIN = 32
_MAX_SHOWN_VALUES = 6


class SpecShapeError(Exception):
    """The document is not an OpenAPI document this comparison can read."""


class _Unresolvable(Exception):
    def __init__(self, ref: str) -> None:
        super().__init__(ref)
        self.ref = ref


@dataclass(frozen=True)
class Finding:
    severity: Severity
    where: str  # e.g. "params.message.role" or "result.contextId"; "" for the method itself
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "where": self.where, "message": self.message}


def _status(findings: list[Finding]) -> Status:
    if any(f.severity == "error" for f in findings):
        return "incompatible"
    return "warning" if findings else "ok"


@dataclass
class MethodCompat:
    method: str
    offered: bool
    optional: bool
    request: list[Finding] = field(default_factory=list)
    result: list[Finding] = field(default_factory=list)
    method_findings: list[Finding] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [*self.method_findings, *self.request, *self.result]

    @property
    def request_status(self) -> Status:
        return _status(self.request) if self.offered else "-"

    @property
    def result_status(self) -> Status:
        return _status(self.result) if self.offered else "-"

    @property
    def status(self) -> Status:
        return _status(self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "offered": self.offered,
            "optional": self.optional,
            "request": self.request_status,
            "result": self.result_status,
            "status": self.status,
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class DocumentInfo:
    title: str
    version: str

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> DocumentInfo:
        info = document.get("info")
        info = info if isinstance(info, Mapping) else {}
        return cls(str(info.get("title", "(untitled)")), str(info.get("version", "(unversioned)")))


@dataclass
class CompatReport:
    ours: DocumentInfo
    peer: DocumentInfo
    methods: list[MethodCompat]
    peer_only: list[str]  # methods the peer offers that we never call
    general: list[Finding]  # about the documents rather than one method

    @property
    def findings(self) -> list[Finding]:
        return [*self.general, *(f for m in self.methods for f in m.findings)]

    @property
    def compatible(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def has_warnings(self) -> bool:
        return any(f.severity == "warning" for f in self.findings)

    @property
    def verdict(self) -> str:
        if not self.compatible:
            return "incompatible"
        return "compatible, with warnings" if self.has_warnings else "compatible"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ours": {"title": self.ours.title, "version": self.ours.version},
            "peer": {"title": self.peer.title, "version": self.peer.version},
            "compatible": self.compatible,
            "verdict": self.verdict,
            "methods": [m.as_dict() for m in self.methods],
            "peer_only_methods": self.peer_only,
            "general": [f.as_dict() for f in self.general],
        }


# -- reading a document -------------------------------------------------------------------------


class _Document:
    """A parsed OpenAPI document and local `$ref` resolution within it."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise _Unresolvable(ref)
        node: Any = self.raw
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise _Unresolvable(ref)
        return node

    def resolve(self, node: Any) -> tuple[Any, str | None]:
        """(the schema with `$ref`s followed and `allOf` merged, the last ref followed)."""
        last: str | None = None
        for _ in range(_MAX_REF_CHAIN):
            if not isinstance(node, Mapping) or not isinstance(node.get("$ref"), str):
                break
            ref = node["$ref"]
            target = self.pointer(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, Mapping) else target
            last = ref
        else:
            raise _Unresolvable(str(node.get("$ref")))
        if isinstance(node, Mapping) and isinstance(node.get("allOf"), list):
            node = self._merge_all_of(node)
        return node, last

    def _merge_all_of(self, node: Mapping[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            resolved, _ = self.resolve(part)
            if not isinstance(resolved, Mapping):
                continue
            for key, value in resolved.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                elif key == "additionalProperties" and value is False:
                    merged[key] = False
                else:
                    merged.setdefault(key, value)
        return merged


def _variants(schema: Mapping[str, Any]) -> list[Any] | None:
    for key in ("oneOf", "anyOf"):
        value = schema.get(key)
        if isinstance(value, list) and value:
            return value
    return None


def _ref_name(ref: str | None) -> str | None:
    return ref.rsplit("/", 1)[-1] if ref else None


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        found = {declared}
    elif isinstance(declared, list):
        found = {t for t in declared if isinstance(t, str)}
    else:
        values = _values(schema)
        if values is not None:
            found = {_json_type(json.loads(v)) for v in values}
        elif "properties" in schema or "required" in schema:
            found = {"object"}
        elif "items" in schema or "prefixItems" in schema:
            found = {"array"}
        else:
            return None
    if schema.get("nullable") is True:  # OpenAPI 3.0 style
        found.add("null")
    return found


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _values(schema: Mapping[str, Any]) -> set[str] | None:
    """The allowed values (as canonical JSON), or None when not limited to a list."""
    if "const" in schema:
        return {_canon(schema["const"])}
    enum = schema.get("enum")
    if isinstance(enum, list):
        return {_canon(value) for value in enum}
    return None


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _shown(values: set[str]) -> str:
    ordered = sorted(values)
    text = ", ".join(ordered[:_MAX_SHOWN_VALUES])
    return text + (f", ... ({len(ordered)} in all)" if len(ordered) > _MAX_SHOWN_VALUES else "")


def _type_fits(sent: set[str], accepted: set[str]) -> set[str]:
    """The sent types the receiver does not accept (an integer is also a number)."""
    return {t for t in sent if t not in accepted and not (t == "integer" and "number" in accepted)}


def _closed(schema: Mapping[str, Any]) -> bool:
    return (
        schema.get("additionalProperties") is False or schema.get("unevaluatedProperties") is False
    )


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> set[str]:
    req = schema.get("required")
    return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()


def _const_of(schema: Any, document: _Document, prop: str) -> str | None:
    """The canonical const (or one-value enum) of `prop` in an object schema, if any."""
    try:
        resolved, _ = document.resolve(schema)
        if not isinstance(resolved, Mapping):
            return None
        member, _ = document.resolve(_properties(resolved).get(prop))
    except _Unresolvable:
        return None
    if not isinstance(member, Mapping):
        return None
    values = _values(member)
    return next(iter(values)) if values is not None and len(values) == 1 else None


# -- comparing two schemas ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Direction:
    """Who writes and who reads: in a request we send and the peer reads; in a result the
    reverse. `sender` and `receiver` are "we" or "the peer"."""

    sender: str
    receiver: str

    @staticmethod
    def says(subject: str, verb: str) -> str:
        if subject == "we":
            return f"we {verb}"
        return f"{subject} {'does' if verb == 'do' else verb + 's'}"

    @staticmethod
    def whose(subject: str) -> str:
        return "our" if subject == "we" else f"{subject}'s"


REQUEST = _Direction("we", "the peer")
RESULT = _Direction("the peer", "we")


class _Comparison:
    def __init__(self, sender: _Document, receiver: _Document, direction: _Direction) -> None:
        self.sender, self.receiver, self.direction = sender, receiver, direction
        self.findings: list[Finding] = []
        # Pairs being compared further up: a recursive schema (Message -> TaskStatus ->
        # Message) is compared once per path; the budget bounds pathological documents.
        self._stack: set[tuple[object, object]] = set()
        self._budget = [_MAX_COMPARISONS]

    def add(self, severity: Severity, where: str, message: str) -> None:
        self.findings.append(Finding(severity, where, message))

    def compare(self, sent: Any, accepted: Any, where: str, depth: int = 0) -> None:
        try:
            s, s_ref = self.sender.resolve(sent)
        except _Unresolvable as exc:
            whose = self.direction.whose(self.direction.sender)
            self.add("error", where, f"cannot resolve {whose} $ref {exc.ref!r}")
            return
        try:
            r, r_ref = self.receiver.resolve(accepted)
        except _Unresolvable as exc:
            whose = self.direction.whose(self.direction.receiver)
            self.add("error", where, f"cannot resolve {whose} $ref {exc.ref!r}")
            return
        if r is False:
            self.add(
                "error",
                where,
                f"{self.direction.says(self.direction.receiver, 'accept')} nothing here",
            )
            return
        if s is True or r is True or not isinstance(r, Mapping) or not r:
            return  # the receiver accepts anything
        if not isinstance(s, Mapping):
            return
        key = (s_ref or id(s), r_ref or id(r))
        if key in self._stack or depth > _MAX_DEPTH or self._budget[0] <= 0:
            return
        self._budget[0] -= 1
        self._stack.add(key)
        try:
            sent_variants, accepted_variants = _variants(s), _variants(r)
            if sent_variants is None and accepted_variants is None:
                self._compare_one(s, r, where, depth)
            else:
                self._compare_union(
                    s, sent_variants or [s], r, accepted_variants or [r], where, depth
                )
        finally:
            self._stack.discard(key)

    def _trial(self, sent: Any, accepted: Any, where: str, depth: int) -> list[Finding]:
        trial = _Comparison(self.sender, self.receiver, self.direction)
        trial._stack = set(self._stack)
        trial._budget = self._budget
        trial.compare(sent, accepted, where, depth)
        return trial.findings

    def _compare_union(
        self,
        s: Mapping[str, Any],
        sent: list[Any],
        r: Mapping[str, Any],
        accepted: list[Any],
        where: str,
        depth: int,
    ) -> None:
        """Each variant we (or the peer) may send must match one the other side accepts: by
        the discriminator's const when there is one, else the closest fit."""
        prop = _discriminator(s) or _discriminator(r)
        unmatched: list[str] = []
        for index, variant in enumerate(sent):
            tag = _const_of(variant, self.sender, prop) if prop else None
            candidates = accepted
            if tag is not None and prop is not None:
                candidates = [
                    a for a in accepted if _const_of(a, self.receiver, prop) in (tag, None)
                ]
            label = f"{prop}={tag}" if tag else _ref_name(_raw_ref(variant)) or f"variant {index}"
            if not candidates:
                unmatched.append(label)
                continue
            trials = [self._trial(variant, candidate, where, depth + 1) for candidate in candidates]
            best = min(trials, key=_badness)
            if len(sent) > 1 and any(f.severity == "error" for f in best):
                unmatched.append(label)
            else:
                self.findings.extend(best)
        if not unmatched:
            return
        if len(unmatched) == len(sent):
            self.add(
                "error",
                where,
                f"{self.direction.says(self.direction.receiver, 'accept')} none of the forms "
                f"{self.direction.says(self.direction.sender, 'send')} ({', '.join(unmatched)})",
            )
        else:
            for label in unmatched:
                self.add(
                    "warning",
                    where,
                    f"{self.direction.says(self.direction.receiver, 'do')} not accept the form "
                    f"{label}",
                )

    def _compare_one(
        self, s: Mapping[str, Any], r: Mapping[str, Any], where: str, depth: int
    ) -> None:
        d = self.direction
        sent_types, accepted_types = _types(s), _types(r)
        if accepted_types is not None:
            if sent_types is None:
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'accept')} only {'/'.join(sorted(accepted_types))}; "
                    f"{d.whose(d.sender)} schema does not limit the type",
                )
            else:
                refused = _type_fits(sent_types, accepted_types)
                if refused == sent_types:
                    self.add(
                        "error",
                        where,
                        f"{d.says(d.sender, 'send')} {'/'.join(sorted(sent_types))}; "
                        f"{d.says(d.receiver, 'accept')} only {'/'.join(sorted(accepted_types))}",
                    )
                    return
                if refused:
                    self.add(
                        "warning",
                        where,
                        f"{d.says(d.receiver, 'do')} not accept {'/'.join(sorted(refused))}",
                    )
        self._compare_values(s, r, where)
        self._compare_ranges(s, r, where)
        pattern = r.get("pattern")
        if isinstance(pattern, str) and s.get("pattern") != pattern and _values(s) is None:
            self.add("warning", where, f"{d.says(d.receiver, 'require')} the pattern {pattern}")
        self._compare_object(s, r, where, depth)
        if "items" in s and "items" in r:
            self.compare(s["items"], r["items"], f"{where}[]", depth + 1)

    def _compare_values(self, s: Mapping[str, Any], r: Mapping[str, Any], where: str) -> None:
        d = self.direction
        accepted = _values(r)
        if accepted is None:
            return
        sent = _values(s)
        if sent is None:
            self.add(
                "warning",
                where,
                f"{d.says(d.receiver, 'accept')} only {_shown(accepted)}; "
                f"{d.whose(d.sender)} schema allows other values",
            )
            return
        refused = sent - accepted
        if refused == sent:
            self.add(
                "error",
                where,
                f"{d.says(d.sender, 'send')} {_shown(sent)}; "
                f"{d.says(d.receiver, 'accept')} only {_shown(accepted)}",
            )
        elif refused:
            self.add("warning", where, f"{d.says(d.receiver, 'do')} not accept {_shown(refused)}")

    def _compare_ranges(self, s: Mapping[str, Any], r: Mapping[str, Any], where: str) -> None:
        d = self.direction
        for low_key, high_key, unit in _RANGES:
            suffix = f" {unit}" if unit else ""
            high, sent_high = _number(r.get(high_key)), _number(s.get(high_key))
            if high is not None and (sent_high is None or sent_high > high):
                bound = f"up to {_fmt(sent_high)}" if sent_high is not None else "any size"
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'accept')} at most {_fmt(high)}{suffix}; "
                    f"{d.whose(d.sender)} schema allows {bound}",
                )
            low, sent_low = _number(r.get(low_key)), _number(s.get(low_key))
            if low is not None and low > 0 and (sent_low is None or sent_low < low):
                bound = f"down to {_fmt(sent_low)}" if sent_low is not None else "any size"
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'require')} at least {_fmt(low)}{suffix}; "
                    f"{d.whose(d.sender)} schema allows {bound}",
                )

    def _compare_object(
        self, s: Mapping[str, Any], r: Mapping[str, Any], where: str, depth: int
    ) -> None:
        d = self.direction
        sent_props, accepted_props = _properties(s), _properties(r)
        sent_required, accepted_required = _required(s), _required(r)
        if not (sent_props or accepted_props or accepted_required):
            return
        for name in sorted(accepted_required):
            if name not in sent_props:
                if not _closed(s) and not sent_props:
                    continue  # a free-form object on the sending side: nothing to compare
                self.add(
                    "error",
                    _join(where, name),
                    f"{d.says(d.receiver, 'require')} it; {d.whose(d.sender)} schema never has it",
                )
            elif name not in sent_required:
                self.add(
                    "warning",
                    _join(where, name),
                    f"{d.says(d.receiver, 'require')} it; "
                    f"{d.whose(d.sender)} schema makes it optional",
                )
        for name in sent_props:
            if name in accepted_props:
                self.compare(sent_props[name], accepted_props[name], _join(where, name), depth + 1)
            elif _closed(r):
                always = name in sent_required
                sends = d.says(d.sender, "send").replace(" send", " always send", 1)
                self.add(
                    "error" if always else "warning",
                    _join(where, name),
                    f"{sends if always else d.sender + ' may send'} it; "
                    f"{d.says(d.receiver, 'reject')} unknown members",
                )


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _fmt(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _discriminator(schema: Mapping[str, Any]) -> str | None:
    found = schema.get("discriminator")
    if isinstance(found, Mapping) and isinstance(found.get("propertyName"), str):
        return str(found["propertyName"])
    return None


def _raw_ref(node: Any) -> str | None:
    return node.get("$ref") if isinstance(node, Mapping) else None


def _badness(findings: list[Finding]) -> tuple[int, int]:
    return (
        sum(f.severity == "error" for f in findings),
        sum(f.severity == "warning" for f in findings),
    )


# -- the JSON-RPC operation ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Rpc:
    requests: dict[str, Any]  # method -> request envelope schema (unresolved)
    results: list[tuple[str | None, Any]]  # (definition name, schema) of each result variant


def _rpc_operation(document: _Document) -> Mapping[str, Any] | None:
    paths = document.raw.get("paths")
    if not isinstance(paths, Mapping):
        return None
    for path in (RPC_PATH, RPC_PATH.rstrip("/")):
        item = paths.get(path)
        if isinstance(item, Mapping):
            try:
                item, _ = document.resolve(item)
            except _Unresolvable:
                return None
            post = item.get("post") if isinstance(item, Mapping) else None
            if isinstance(post, Mapping):
                return post
    return None


def _json_schema_of(document: _Document, holder: Any) -> Any:
    """The application/json schema of a request body or response (after `$ref`s)."""
    resolved, _ = document.resolve(holder)
    if not isinstance(resolved, Mapping):
        return None
    content = resolved.get("content")
    if not isinstance(content, Mapping):
        return None
    for media_type, entry in content.items():
        if str(media_type).split(";")[0].strip().lower() == "application/json" and isinstance(
            entry, Mapping
        ):
            return entry.get("schema")
    return None


def _flatten(document: _Document, schema: Any) -> Iterator[tuple[str | None, Any]]:
    """(definition name, schema) of each variant of a union, nested unions flattened."""
    resolved, ref = document.resolve(schema)
    if not isinstance(resolved, Mapping):
        return
    variants = _variants(resolved)
    # A union that is itself a method's result (V1SendMessageResult) stays whole.
    if variants is None or _ref_name(ref) in _UNION_RESULTS:
        yield _ref_name(ref), schema
        return
    for variant in variants:
        yield from _flatten(document, variant)


def _envelopes(document: _Document, envelope: Any) -> Iterator[tuple[str, Any]]:
    """(method, request schema) for one member of a request union: its `method`'s const or
    enum; else, for a generic envelope (`method` any string), one per member of its params
    union whose own `method` is a const (as in our RpcParams), with params narrowed to it."""
    resolved, _ = document.resolve(envelope)
    if not isinstance(resolved, Mapping):
        return
    props = _properties(resolved)
    method, _ = document.resolve(props.get("method"))
    values = _values(method) if isinstance(method, Mapping) else None
    if values:
        for value in sorted(values):
            name = json.loads(value)
            if isinstance(name, str):
                yield name, envelope
        return
    if "params" not in props:
        return
    for _, params in _flatten(document, props["params"]):
        const = _const_of(params, document, "method")
        name = json.loads(const) if const is not None else None
        if isinstance(name, str):
            narrowed = {"const": name}
            yield name, {**resolved, "properties": {**props, "method": narrowed, "params": params}}


def _read_rpc(document: _Document, whose: str) -> _Rpc:
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
            result = _properties(resolved).get("result") if isinstance(resolved, Mapping) else None
            if result is not None:
                results.extend(_flatten(document, result))
    return _Rpc(requests, results)


# -- the comparison ------------------------------------------------------------------------------


def compare_specs(ours: Mapping[str, Any], peer: Mapping[str, Any]) -> CompatReport:
    """Compare a peer's OpenAPI document with ours, method by method (we are the caller).

    Raises SpecShapeError when `peer` is not an OpenAPI 3 document."""
    if not isinstance(peer, Mapping) or not str(peer.get("openapi", "")).startswith("3."):
        raise SpecShapeError("not an OpenAPI 3 document (no 'openapi: 3.x' member)")
    our_doc, peer_doc = _Document(ours), _Document(peer)
    report = CompatReport(DocumentInfo.of(ours), DocumentInfo.of(peer), [], [], [])
    our_rpc = _read_rpc(our_doc, "our")
    our_major = report.ours.version.split(".")[0]
    if report.peer.version.split(".")[0] != our_major:
        report.general.append(
            Finding(
                "warning",
                "",
                f"the peer's contract is version {report.peer.version}, ours "
                f"{report.ours.version}: a different major version",
            )
        )
    try:
        peer_rpc = _read_rpc(peer_doc, "the peer's")
    except SpecShapeError as exc:
        report.general.append(Finding("error", "", str(exc)))
        peer_rpc = _Rpc({}, [])
    except _Unresolvable as exc:
        report.general.append(Finding("error", "", f"cannot resolve the peer's $ref {exc.ref!r}"))
        peer_rpc = _Rpc({}, [])
    for method, our_request in our_rpc.requests.items():
        report.methods.append(
            _compare_method(method, our_request, our_rpc, our_doc, peer_rpc, peer_doc)
        )
    report.peer_only = sorted(set(peer_rpc.requests) - set(our_rpc.requests))
    return report


def _compare_method(
    method: str,
    our_request: Any,
    our_rpc: _Rpc,
    our_doc: _Document,
    peer_rpc: _Rpc,
    peer_doc: _Document,
) -> MethodCompat:
    optional = method in OPTIONAL_METHODS
    peer_request = peer_rpc.requests.get(method)
    entry = MethodCompat(method, peer_request is not None, optional)
    if peer_request is None:
        why = (
            " (an optional SynthOrg extension method: delegation is unaffected)" if optional else ""
        )
        entry.method_findings.append(
            Finding(
                "warning" if optional else "error", "", f"the peer's spec does not offer it{why}"
            )
        )
        return entry
    request = _Comparison(our_doc, peer_doc, REQUEST)
    request.compare(our_request, peer_request, "")
    entry.request = request.findings
    name = RESULTS.get(method)
    # A union result (a stream's StreamEvent) is flattened in the result union: find it by
    # its component name then, as the peer's is.
    ours = None if name is None else _peer_result(name, our_rpc, our_doc)
    if name is None or ours is None:
        entry.result.append(
            Finding("warning", "result", "our spec does not say which result this method returns")
        )
        return entry
    theirs = _peer_result(name, peer_rpc, peer_doc)
    if theirs is None:
        entry.result.append(
            Finding("error", "result", f"the peer's spec has no {name} result for this method")
        )
        return entry
    result = _Comparison(peer_doc, our_doc, RESULT)
    result.compare(theirs, ours, "result")
    entry.result = result.findings
    return entry


def _peer_result(name: str, rpc: _Rpc, document: _Document) -> Any:
    """The peer's result for one of ours: the same-named variant of its result union; a lone
    result schema; or, failing both, a component schema of that name."""
    for found, schema in rpc.results:
        if found == name:
            return schema
    if len(rpc.results) == 1:
        return rpc.results[0][1]
    components = document.raw.get("components")
    schemas = components.get("schemas") if isinstance(components, Mapping) else None
    if isinstance(schemas, Mapping) and name in schemas:
        return {"$ref": f"#/components/schemas/{name}"}
    return None


# -- presenting a report --------------------------------------------------------------------------


def render_table(report: CompatReport, source: str) -> str:
    """The human-readable report `spec check` prints."""
    lines = [
        f"peer:  {report.peer.title} {report.peer.version} ({source})",
        f"ours:  {report.ours.title} {report.ours.version}",
        "",
    ]
    rows = [("method", "offered", "request", "result")]
    for entry in report.methods:
        offered = "yes" if entry.offered else ("no (optional)" if entry.optional else "no")
        rows.append((entry.method, offered, entry.request_status, entry.result_status))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    findings = report.findings
    if findings:
        lines += ["", "findings:"]
        for finding in report.general:
            lines.append(f"  {finding.severity}: {finding.message}")
        for entry in report.methods:
            for finding in entry.findings:
                where = f" {finding.where}" if finding.where else ""
                lines.append(f"  {finding.severity}: {entry.method}{where}: {finding.message}")
    if report.peer_only:
        lines += ["", f"the peer also offers: {', '.join(report.peer_only)}"]
    lines += ["", f"verdict: {report.verdict}"]
    return "\n".join(lines)
