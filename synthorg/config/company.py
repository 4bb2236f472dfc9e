"""The company YAML (`$SYNTHORG_DATA_DIR/config.yaml`) and its `a2a` key, A2AConfig.

The file's shape is `CompanyFile` in spec/schemas/config.json; the models are generated. This
module adds what a schema cannot say: peer-name canonicalisation, unique agent ids, executor
cross-checks, and a pointer for keys that moved to the connection catalog.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from synthorg.contract.spec import all_definitions, ref_target
from synthorg.generated.models import (
    A2AConfig,
    AgentConfig,
    CompanyConfig,
    CompanyFile,
    ConsoleConfig,
    ObservabilityConfig,
    ServerConfig,
)
from synthorg.names import canonical_peer_name

CONFIG_FILE = "config.yaml"
MOVED_TO_CATALOG = ("peer_url", "peer_jwt_secret")
DEFAULT_AGENT = {
    "id": "echo",
    "name": "Echo",
    "role": "Echoes the text it is sent",
    "skills": [
        {
            "id": "echo",
            "name": "Echo",
            "description": "Replies with the text it was sent.",
            "tags": ["echo", "test"],
        }
    ],
    "executor": {"kind": "echo"},
}


class ConfigError(Exception):
    """One clear line: the file, the key and the problem."""


@dataclass(frozen=True)
class NodeConfig:
    source: Path | None  # None: no file, defaults in force
    company: CompanyConfig
    agents: tuple[AgentConfig, ...]
    a2a: A2AConfig
    allowed_peers: frozenset[str]
    server: ServerConfig = field(default_factory=ServerConfig)  # HTTP connection limits
    observability: ObservabilityConfig = field(default_factory=ObservabilityConfig)
    python_path: tuple[str, ...] = ()  # where kind python entrypoints are looked for first
    console: ConsoleConfig = field(default_factory=ConsoleConfig)

    @property
    def default_agent(self) -> str:
        return self.agents[0].id


def format_loc(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _fail(source: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"{source}: {key}: {problem}")


Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]
MOVED_PROBLEM = (
    "is not a config key: outbound peers live in the connection catalog "
    "(synthorg-a2a peers add NAME --endpoint URL)"
)
BAD_PEER_NAME = (
    "not a valid peer name (letters, digits, '.', '_', '-'; at most 63; "
    "starting with a letter or digit)"
)


def _semantic_problems(data: dict[str, Any]) -> list[Problem]:
    """What the schema cannot say; defensive about shape, the schema reports that."""
    problems: list[Problem] = []
    a2a = data.get("a2a")
    peers = a2a.get("allowed_peers") if isinstance(a2a, dict) else None
    for index, raw in enumerate(peers if isinstance(peers, list) else []):
        if isinstance(raw, str) and canonical_peer_name(raw) is None:
            problems.append((("a2a", "allowed_peers", index), BAD_PEER_NAME))
    agents = data.get("agents")
    seen: set[str] = set()
    for index, agent in enumerate(agents if isinstance(agents, list) else []):
        if not isinstance(agent, dict):
            continue
        agent_id = agent.get("id")
        if isinstance(agent_id, str):
            if agent_id in seen:
                problems.append((("agents", index, "id"), f"duplicate agent id {agent_id!r}"))
            seen.add(agent_id)
        executor = agent.get("executor")
        if (
            isinstance(executor, dict)
            and executor.get("kind") == "python"
            and not executor.get("entrypoint")
        ):
            problems.append(
                (("agents", index, "executor", "entrypoint"), "required when kind is python")
            )
        if isinstance(executor, dict) and executor.get("kind") == "echo":
            options = executor.get("options") or {}
            if not isinstance(options, dict) or set(options) - {"reply"} or options.get(
                "reply", "message"
            ) != "message":
                problems.append((("agents", index, "executor", "options"),
                                 "echo takes only {reply: message}"))
        if isinstance(executor, dict) and executor.get("kind") == "peer":
            if not executor.get("peer"):
                problems.append(
                    (("agents", index, "executor", "peer"), "required when kind is peer")
                )
            if not (isinstance(a2a, dict) and a2a.get("node_name")):
                problems.append(
                    (
                        ("agents", index, "executor", "kind"),
                        "peer forwarding needs a2a.node_name (the name peers know this node by)",
                    )
                )
    return problems


def find_problems(data: Any) -> tuple[list[Problem], CompanyFile | None]:
    """Every problem in a loaded document, in document order where the schema gives one."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return [((), "must be a mapping of keys to values")], None
    problems: list[Problem] = []
    a2a_raw = data.get("a2a")
    if isinstance(a2a_raw, dict) and any(key in a2a_raw for key in MOVED_TO_CATALOG):
        problems += [(("a2a", key), MOVED_PROBLEM) for key in MOVED_TO_CATALOG if key in a2a_raw]
        kept = {k: v for k, v in a2a_raw.items() if k not in MOVED_TO_CATALOG}
        data = {**data, "a2a": kept}  # reported once, not again as an unknown key
    parsed: CompanyFile | None = None
    try:
        parsed = CompanyFile.model_validate(data)
    except ValidationError as exc:
        for item in exc.errors(include_url=False, include_context=False):
            problems.append((tuple(item["loc"]), _worded(item)))
    problems += _semantic_problems(data)
    return problems, (parsed if not problems else None)


# Pydantic's words for a value out of range or of the wrong type; reworded from the schema
# as "must be an integer from 1 to 1000; got 5000".
_RANGE_ERRORS = frozenset({
    "less_than", "less_than_equal", "greater_than", "greater_than_equal", "int_type",
    "int_parsing", "int_from_float", "float_type", "float_parsing", "finite_number",
    "string_too_short", "string_too_long", "too_short", "too_long",
})


def _worded(item: Any) -> str:
    if item["type"] == "extra_forbidden":
        return "unknown key"
    if item["type"] in _RANGE_ERRORS:
        schema = _schema_at(tuple(item["loc"]))
        allowed = allowed_values(schema) if schema is not None else None
        if allowed is not None:
            return f"must be {allowed}; got {_given(item.get('input'))}"
    return str(item["msg"])


def _schema_at(loc: Loc) -> dict[str, Any] | None:
    """The config schema of the value at `loc` in a CompanyFile, or None."""
    schema: Any = {"$ref": "#/$defs/CompanyFile"}
    for part in loc:
        schema = _resolved(schema)
        if isinstance(part, int):
            schema = schema.get("items")
        else:
            schema = schema.get("properties", {}).get(part)
        if not isinstance(schema, dict):
            return None
    return _resolved(schema)


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = all_definitions()[ref_target(schema["$ref"])][1]
    return schema


def allowed_values(schema: dict[str, Any]) -> str | None:
    """What a number's or a string's schema allows, in words: "an integer from 1 to 1000",
    "a string of 1 to 255 characters"; None for any other schema."""
    kind = schema.get("type")
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {json.dumps(low)} to {json.dumps(high)}"
        if low is not None:
            return f"{noun} of at least {json.dumps(low)}"
        if high is not None:
            return f"{noun} of at most {json.dumps(high)}"
        return noun
    if kind == "string" and "pattern" not in schema and "enum" not in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if high is not None:
            return f"a string of {low} to {high} characters"
        return f"a string of at least {low} character{'' if low == 1 else 's'}"
    return None


def _given(value: Any) -> str:
    """The offending value, short: a long string by its length only."""
    if isinstance(value, str) and len(value) > 40:
        return f"a string of {len(value)} characters"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def parse_config(data: Any, source: str, origin: Path | None = None) -> NodeConfig:
    """Validate an already-loaded YAML document; the first problem is raised."""
    problems, parsed = find_problems(data)
    if problems or parsed is None:
        loc, problem = problems[0]
        raise _fail(source, format_loc(loc), problem)
    a2a = parsed.a2a or A2AConfig()
    allowed = frozenset(
        name for raw in a2a.allowed_peers or [] if (name := canonical_peer_name(raw)) is not None
    )
    agents = tuple(parsed.agents) if parsed.agents else (AgentConfig.model_validate(DEFAULT_AGENT),)
    return NodeConfig(
        source=origin,
        company=parsed.company or CompanyConfig(),
        agents=agents,
        a2a=a2a,
        allowed_peers=allowed,
        server=parsed.server or ServerConfig(),
        observability=parsed.observability or ObservabilityConfig(),
        python_path=tuple(parsed.python_path or ()),
        console=parsed.console or ConsoleConfig(),
    )


def load_config(data_dir: Path) -> NodeConfig:
    """Read `config.yaml` from the data dir; a missing file means defaults."""
    path = data_dir / CONFIG_FILE
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return parse_config({}, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(str(path), "(file)", f"cannot be read ({type(exc).__name__})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise _fail(
            str(path), where, f"not valid YAML ({getattr(exc, 'problem', 'syntax')})"
        ) from None
    return parse_config(data, str(path), path)
