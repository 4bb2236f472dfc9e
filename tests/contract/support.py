"""What both contract runs share: the node's data dir, the Schemathesis schema and config, and the
JSON-RPC checks Schemathesis does not know about.

Schemathesis checks HTTP semantics; JSON-RPC answers most refusals with HTTP 200 and an error
object, so two custom checks hold the JSON-RPC side of the contract:

- `jsonrpc_error_for_nonconforming_request`: a 200 answering a request whose body does not
  conform to the spec's request schema must carry a JSON-RPC `error` (and no `result`);
- `jsonrpc_result_or_error`: a 200 answering a conforming request carries exactly one of
  `result` and `error`.

Together with the built-in checks (`not_a_server_error` among them) they make up ALL_CHECKS.
"""

from __future__ import annotations

import copy
import json
import os
import re
import zlib
from collections import Counter
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import hypothesis
import schemathesis
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from schemathesis.checks import CHECKS, CheckContext, load_all_checks, max_response_time
from schemathesis.core.errors import InvalidSchema
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.schemas import OpenApiSchema
from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.contract.spec import bundled_openapi
from synthorg.dialects.protojson import json_names
from synthorg.generated.constants import METHODS_V1, V1_FREE_FORM_MEMBERS, V1_PROTO_NAMES
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database

AnyCase = schemathesis.Case[APIOperation[Any, Any, Any, Any]]
ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILE = ROOT / "schemathesis.toml"
RPC_BODY_REF = "#/components/schemas/JsonRpcRequest"
_AGENT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_PEER_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
ADMIN_PEER_PATH = "/api/v1/admin/peers/"

PEER = "contract-peer"
# A throwaway credential for a throwaway data dir; it only has to be the same on both sides.
SECRET = "contract-test-credential-4f1c9a"
NODE_CONFIG = f"""\
company:
  name: Contract node
agents:
  - id: echo
    name: Echo
    skills: [{{id: echo, name: Echo, tags: [echo, test]}}]
    executor: {{kind: echo}}
  - id: parker
    name: Parker
    executor: {{kind: park}}
  # Schemathesis' coverage phase sends every agent-endpoint case to the smallest id its pattern
  # allows, "0": an agent by that id takes those cases past the unknown-agent 404.
  - id: "0"
    name: Zero
    executor: {{kind: echo}}
a2a:
  enabled: true
  allowed_peers: [{PEER}]
  # The peer's catalog endpoint is a closed loopback port; should anything listen there, a card
  # fetch (skills/query, skills/negotiate) still gives up quickly.
  client_timeout_seconds: 2
"""


def prepare_data_dir(data_dir: Path) -> Path:
    """A node data dir: the company YAML, and the calling peer's catalog record."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.yaml").write_text(NODE_CONFIG)
    db = open_database(data_dir)
    try:
        SqliteCatalog(db, SecretBox.for_data_dir(data_dir)).put(
            PEER, "http://127.0.0.1:9", "api_key", SECRET
        )
    finally:
        db.close()
    return data_dir


AGENT_IDS = ("echo", "parker", "0")


ADMIN_PATHS = r"^/api/v1/admin/"
OTHER_PATHS = r"^/(?!api/v1/admin/)"


FUZZ_EXAMPLES_ENV = "SYNTHORG_FUZZ_EXAMPLES"
FUZZ_SEED_ENV = "SYNTHORG_FUZZ_SEED"


def fuzzing() -> tuple[int, int] | None:
    """(examples per operation, seed) when `make fuzz` asked for a long random run."""
    examples = os.environ.get(FUZZ_EXAMPLES_ENV)
    if not examples:
        return None
    return int(examples), int(os.environ.get(FUZZ_SEED_ENV) or 0)


def load_schema(*, admin: bool = False, max_examples: int | None = None) -> OpenApiSchema:
    """The bundled spec as a Schemathesis schema, with schemathesis.toml applied and this
    package's hooks registered on it (on it only: nothing global).

    The peer-facing operations and the admin API (`/api/v1/admin/`) are fuzzed in separate
    runs: they have different credentials, and the admin run changes the node's settings and
    catalog. `admin=False` is the peer-facing operations, `admin=True` the admin API only.
    `max_examples` lowers the examples per operation (`make fuzz` still sets its own).
    (Exclusions, not inclusions: schemathesis.toml's `[[operations]]` already install an
    include-everything filter, and includes are alternatives.)"""
    config = schemathesis.Config.from_path(CONFIG_FILE)
    if max_examples is not None:  # fewer than schemathesis.toml's, for a run that repeats one
        config.projects.default.generation.update(max_examples=max_examples)
    fuzz = fuzzing()
    if fuzz is not None:  # `make fuzz`: a random seed and many examples instead of CI's run
        examples, seed = fuzz
        config.projects.default.generation.update(max_examples=examples, deterministic=False)
        config.update(seed=seed, max_failures=None)
    loaded = schemathesis.openapi.from_dict(copy.deepcopy(bundled_openapi()), config=config)
    selected = loaded.exclude(path_regex=OTHER_PATHS if admin else ADMIN_PATHS)
    assert isinstance(selected, OpenApiSchema)
    selected.hook(map_path_parameters)
    selected.hook(before_generate_body)
    return selected


# The pinned Schemathesis refuses some negative bodies it mutated itself (docs/schemathesis.md).
UNBUILDABLE = "demanded elements"


def before_generate_body(
    context: schemathesis.HookContext, strategy: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Every body drawn through `_drawn_or_rejected`: a body the generator itself cannot
    build (a defect of the pinned Schemathesis, docs/schemathesis.md) is one example
    rejected, not an error of the run. Which mutation a run draws depends on what else the
    process imported (Hypothesis draws constants from every local module), so without this
    the same operation passed alone and failed in the whole suite.

    A 1.0 request is sent with its members' JSON names or their proto field names, as a
    ProtoJSON writer may (the spec's ProtoJSON input rule): both spellings are fuzzed."""
    drawn = _drawn_or_rejected(strategy)
    operation = getattr(context, "operation", None)  # the defect tests call it with no context
    if operation is None or not is_rpc_operation_definition(operation):
        return drawn
    return drawn.map(_half_proto_spelled)


def _half_proto_spelled(body: Any) -> Any:
    """About half the 1.0 requests in their proto spelling, chosen by a checksum of what was
    drawn: left to Hypothesis, the choice leaned so far to the first spelling that a run
    sent a handful of proto names in all."""
    return proto_spelled(body) if zlib.crc32(repr(body).encode()) % 2 else body


_PROTO_SPELLING = {json_name: proto for proto, json_name in V1_PROTO_NAMES.items()}


def _proto_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            _PROTO_SPELLING.get(name, name):
                member if name in V1_FREE_FORM_MEMBERS else _proto_value(member)
            for name, member in value.items()
        }
    if isinstance(value, list):
        return [_proto_value(item) for item in value]
    return value


def proto_spelled(body: Any) -> Any:
    """A 1.0 request with every member the spec names written as its proto field name
    (`contextId` -> `context_id`); any other body unchanged."""
    if not _v1_request(body):
        return body
    return {**body, "params": _proto_value(body["params"])}


def sent_proto_names(raw: bytes) -> bool:
    """Whether a request body is a 1.0 request naming a member by its proto field name."""
    try:
        value = parse_body(raw)
    except ValueError:
        return False
    return _v1_request(value) and json_names(value["params"])[0] != value["params"]


def _v1_request(body: Any) -> bool:
    return (
        isinstance(body, dict) and isinstance(body.get("method"), str)
        and body["method"] in METHODS_V1
        and isinstance(body.get("params"), dict)
    )


@st.composite
def _drawn_or_rejected(draw: st.DrawFn, strategy: st.SearchStrategy[Any]) -> Any:
    try:
        return draw(strategy)
    except InvalidSchema as exc:
        if UNBUILDABLE not in str(exc):
            raise
        hypothesis.reject()


def map_path_parameters(
    context: schemathesis.HookContext, path_parameters: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Point about half of the well-formed generated agent ids at the node's real agents, so
    the per-agent endpoints and cards are exercised past their 404; likewise a third of the
    admin API's well-formed peer names at the catalog's real peer. Malformed ids and names
    (negative data) are left alone. Deterministic: the choice is a checksum of what was
    generated."""
    if not path_parameters:
        return path_parameters
    name = path_parameters.get("name")
    if (
        context.operation is not None
        and context.operation.path.startswith(ADMIN_PEER_PATH)
        and isinstance(name, str)
        and _PEER_NAME.fullmatch(name)
    ):
        if zlib.crc32(name.encode()) % 3 == 0:
            return {**path_parameters, "name": PEER}
        return path_parameters
    agent_id = path_parameters.get("agent_id")
    if not isinstance(agent_id, str) or not _AGENT_ID.fullmatch(agent_id):
        return path_parameters
    bucket = zlib.crc32(agent_id.encode()) % (2 * len(AGENT_IDS))
    if bucket < len(AGENT_IDS):
        return {**path_parameters, "agent_id": AGENT_IDS[bucket]}
    return path_parameters


# -- conformance of what was sent ------------------------------------------------------------------


@cache
def _request_validator() -> Draft202012Validator:
    document = bundled_openapi()
    return Draft202012Validator({"$ref": RPC_BODY_REF, "components": document["components"]})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def sent_body(request: Any) -> bytes:
    body = request.body
    if body is None:
        return b""
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def is_rpc_operation(case: AnyCase) -> bool:
    """Whether the case's operation takes a JSON-RPC request body (node or agent endpoint)."""
    return is_rpc_operation_definition(case.operation)


def is_rpc_operation_definition(operation: APIOperation[Any, Any, Any, Any]) -> bool:
    body = operation.definition.raw.get("requestBody", {})
    schema = body.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema.get("$ref") == RPC_BODY_REF)


def parse_body(raw: bytes) -> Any:
    """The JSON value sent; ValueError when the bytes are not strict UTF-8 JSON."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


@lru_cache(maxsize=4)  # both JSON-RPC checks ask about the same body, one after the other
def body_conforms(raw: bytes) -> bool:
    """Whether the bytes sent are UTF-8 JSON that the spec's request schema accepts."""
    try:
        value = parse_body(raw)
    except ValueError:
        return False
    if _v1_request(value):  # proto field names stand for the JSON names they spell
        params, issues = json_names(value["params"])
        if issues:
            return False
        value = {**value, "params": params}
    return bool(_request_validator().is_valid(value))


def _envelopes(response: schemathesis.Response) -> list[dict[str, Any]]:
    """The JSON-RPC envelope of a response, or each event's of a stream (text/event-stream)."""
    if response.headers.get("content-type", [""])[0].startswith("text/event-stream"):
        # Complete events only: the client may cut a long stream short mid-event.
        complete = response.content.decode("utf-8").split("\n\n")[:-1]
        texts = [
            line.removeprefix("data:").strip()
            for event in complete
            for line in event.split("\n")  # SSE lines end at LF, nothing else
            if line.startswith("data:")
        ]
        if not texts:
            raise AssertionError("HTTP 200 with an event stream of no events")
    else:
        texts = [response.content.decode("utf-8", "replace")]
    envelopes = []
    for text in texts:
        try:
            envelope = json.loads(text)
        except ValueError:
            raise AssertionError("HTTP 200 without a JSON body") from None
        if not isinstance(envelope, dict):
            raise AssertionError(f"HTTP 200 with a non-object JSON body: {envelope!r:.200}")
        envelopes.append(envelope)
    return envelopes


# -- custom checks ---------------------------------------------------------------------------------


@schemathesis.check
def jsonrpc_error_for_nonconforming_request(
    ctx: CheckContext, response: schemathesis.Response, case: AnyCase
) -> bool | None:
    """HTTP 200 to a body the request schema rejects must be a JSON-RPC error, never a result."""
    if not is_rpc_operation(case) or response.status_code != 200:
        return None
    if body_conforms(sent_body(response.request)):
        return None
    for envelope in _envelopes(response):
        if "result" in envelope or not isinstance(envelope.get("error"), dict):
            raise AssertionError(
                "A request body that does not conform to the request schema was answered with "
                f"HTTP 200 and no JSON-RPC error: {json.dumps(envelope)[:500]}"
            )
    return True


@schemathesis.check
def jsonrpc_result_or_error(
    ctx: CheckContext, response: schemathesis.Response, case: AnyCase
) -> bool | None:
    """HTTP 200 to a conforming body carries exactly one of `result` and `error`."""
    if not is_rpc_operation(case) or response.status_code != 200:
        return None
    if not body_conforms(sent_body(response.request)):
        return None
    for envelope in _envelopes(response):
        if ("result" in envelope) == ("error" in envelope):
            raise AssertionError(
                "A conforming request was answered with HTTP 200 but not exactly one of "
                f"`result` / `error`: {json.dumps(envelope)[:500]}"
            )
    return True


# The stateful phase: short, reproducible walks through the spec's links.
STATEFUL_SETTINGS = hypothesis.settings(
    max_examples=20,
    stateful_step_count=6,
    deadline=None,
    derandomize=True,
    database=None,
)


def all_checks() -> list[Any]:
    """Every registered Schemathesis check (built-in and ours), plus max_response_time."""
    load_all_checks()
    checks = [check for check in CHECKS.get_all() if not isinstance(check, type)]
    return [*checks, max_response_time]


ALL_CHECKS = all_checks()
EXPECTED_CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
    "max_response_time",
    "jsonrpc_error_for_nonconforming_request",
    "jsonrpc_result_or_error",
}


class Outcomes:
    """What a run's responses looked like, so a run that never got past a gate is caught."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def record(self, case: AnyCase, response: schemathesis.Response) -> None:
        label = f"http-{response.status_code}"
        if response.status_code == 200 and is_rpc_operation(case):
            try:
                envelope = json.loads(response.content)
            except ValueError:
                envelope = {}
            if "result" in envelope:
                result = envelope["result"]
                label = "result-" + (
                    result.get("kind", "skills") if isinstance(result, dict) else "other"
                )
            elif "error" in envelope:
                label = f"error{envelope['error'].get('code')}"
        self.seen[label] += 1
        self.seen[f"{case.operation.label}: {label}"] += 1
        if is_rpc_operation(case) and sent_proto_names(sent_body(response.request)):
            self.seen[f"proto-names: {label}"] += 1


class DeferredApp:
    """An ASGI app whose target is set by a fixture once the node exists.

    The schema has to exist when the module is imported (for `@schema.parametrize()`), the node
    only once a fixture runs; `schemathesis.pytest.from_fixture` would bridge that, but it fails
    under pytest 9 (it reads `request.node._nodeid`, which pytest 9 removed).

    The lifespan is answered here and never reaches the node. Schemathesis keeps a started
    lifespan alive on its own event-loop thread for the rest of the process, so the node's
    background work (runner heartbeats, push delivery) would write to the node's SQLite
    connection from that thread while a test writes to it from its own, between cases. The
    contract is about requests; the lifespan's work is tested on live nodes.
    """

    def __init__(self) -> None:
        self.target: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _answer_lifespan(receive, send)
            return
        if self.target is None:
            raise RuntimeError("the node fixture has not set the app yet")
        await self.target(scope, receive, send)


async def _answer_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def path_conforms(case: AnyCase) -> bool:
    """Whether every path parameter of the case matches its schema. Steps of the stateful
    phase take path parameters from earlier answers (the links Schemathesis infers), and such
    a value need not conform (an empty or capitalised agent id, say): that step is negative
    data, whatever it is labelled, and the answer the spec documents for it is a refusal."""
    values = case.path_parameters or {}
    for parameter in case.operation.path_parameters:
        definition = parameter.definition
        value = values.get(definition["name"])
        if value is None:
            continue
        if not Draft202012Validator(definition.get("schema", {})).is_valid(value):
            return False
    return True


def stateful_checks(case: AnyCase, checks: list[Any]) -> list[Any]:
    """The checks for a stateful step: all of them, or, for a step whose path parameters do
    not conform, those that hold for any request (no positive-data acceptance, and no schema
    of an answer for a path the empty or odd value may have turned into another one)."""
    if path_conforms(case):
        return checks
    return [check for check in checks if getattr(check, "__name__", "") not in _POSITIVE_ONLY]


_POSITIVE_ONLY = frozenset({"positive_data_acceptance", "response_schema_conformance"})
