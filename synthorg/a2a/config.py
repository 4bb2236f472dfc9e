"""The company YAML (`$SYNTHORG_DATA_DIR/config.yaml`) and its `a2a` key, A2AConfig.

The file's shape is `CompanyFile` in spec/schemas/config.json; the models are generated. This
module adds what a schema cannot say: peer-name canonicalisation, unique agent ids, executor
cross-checks, and a pointer for keys that moved to the connection catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from synthorg.a2a.names import canonical_peer_name
from synthorg.generated.models import A2AConfig, AgentConfig, CompanyConfig, CompanyFile

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


def parse_config(data: Any, source: str, origin: Path | None = None) -> NodeConfig:
    """Validate an already-loaded YAML document."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _fail(source, "(top level)", "must be a mapping of keys to values")
    a2a_raw = data.get("a2a")
    if isinstance(a2a_raw, dict):
        for key in MOVED_TO_CATALOG:
            if key in a2a_raw:
                raise _fail(
                    source,
                    f"a2a.{key}",
                    "is not a config key: outbound peers live in the connection catalog "
                    "(synthorg-a2a peers add NAME --endpoint URL)",
                )
    try:
        parsed = CompanyFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False, include_context=False)[0]
        problem = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise _fail(source, format_loc(first["loc"]), problem) from None
    a2a = parsed.a2a or A2AConfig()
    allowed: set[str] = set()
    for index, raw in enumerate(a2a.allowed_peers or []):
        name = canonical_peer_name(raw)
        if name is None:
            raise _fail(
                source,
                f"a2a.allowed_peers[{index}]",
                "not a valid peer name (letters, digits, '.', '_', '-'; at most 63; "
                "starting with a letter or digit)",
            )
        allowed.add(name)
    agents = tuple(parsed.agents) if parsed.agents else (AgentConfig.model_validate(DEFAULT_AGENT),)
    seen: set[str] = set()
    for index, agent in enumerate(agents):
        if agent.id in seen:
            raise _fail(source, f"agents[{index}].id", f"duplicate agent id {agent.id!r}")
        seen.add(agent.id)
        if agent.executor and agent.executor.kind == "peer" and not agent.executor.peer:
            raise _fail(source, f"agents[{index}].executor.peer", "required when kind is peer")
    return NodeConfig(
        source=origin,
        company=parsed.company or CompanyConfig(),
        agents=agents,
        a2a=a2a,
        allowed_peers=frozenset(allowed),
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
