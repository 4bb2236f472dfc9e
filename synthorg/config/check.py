"""`synthorg-a2a config check`: every problem in a company YAML at once, with line numbers.

The node itself stops at the first problem (one clear line); an operator editing the file
wants the whole list. Both use the same checks (`find_problems`). A file read from disk also
has every `kind: python` agent's entrypoint loaded as the node would load it at start, from
the same places (`python_path`, the file's directory, the working directory), and the files
`server.tls` names loaded as the node would serve them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from synthorg.config.company import Loc, find_problems, format_loc
from synthorg.tasks.plugins import PluginError, add_import_roots, load_executor
from synthorg.tls.context import problems as tls_problems
from synthorg.tls.context import tls_files


@dataclass(frozen=True)
class Finding:
    line: int | None  # 1-based
    key: str
    problem: str

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        return f"{where}: {self.key}: {self.problem}"


def _line_of(root: Node | None, loc: Loc, *, at_key: bool) -> int | None:
    """The line of the node `loc` names; the key's own line for unknown-key problems, and
    the nearest existing ancestor when the key is missing."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(node, MappingNode):
            match = next((kv for kv in node.value if kv[0].value == part), None)
            if match is None:
                return line
            key_node, node = match
            line = (key_node if last and at_key else node).start_mark.line + 1
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def check_text(text: str, config_dir: Path | None = None) -> list[Finding]:
    """Every problem in `text`; with `config_dir` (where the file lies), entrypoints too."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = f"not valid YAML ({getattr(exc, 'problem', None) or 'syntax error'})"
        return [Finding(mark.line + 1 if mark else None, "(file)", problem)]
    problems, parsed = find_problems(data)
    if config_dir is not None:
        problems += _entrypoint_problems(data, config_dir)
        tls = parsed.server.tls if parsed is not None and parsed.server is not None else None
        files = tls_files(tls, config_dir)
        if files is not None:
            problems += [(("server", "tls", key), problem) for key, problem in tls_problems(files)]
    findings = [
        Finding(_line_of(root, loc, at_key=problem == "unknown key"), format_loc(loc), problem)
        for loc, problem in problems
    ]
    return sorted(findings, key=lambda f: (f.line or 0, f.key))


def check_file(path: Path) -> list[Finding]:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [Finding(None, "(file)", f"cannot be read ({type(exc).__name__})")]
    return check_text(text, path.parent)


def _entrypoint_problems(data: object, config_dir: Path) -> list[tuple[Loc, str]]:
    """Each well-formed python entrypoint that does not load; malformed ones are reported by
    the schema already."""
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        return []
    wanted: list[tuple[int, str, str, object]] = []
    for index, agent in enumerate(data["agents"]):
        executor = agent.get("executor") if isinstance(agent, dict) else None
        if not isinstance(executor, dict) or executor.get("kind") != "python":
            continue
        agent_id, entrypoint = agent.get("id"), executor.get("entrypoint")
        if isinstance(agent_id, str) and isinstance(entrypoint, str) and ":" in entrypoint:
            wanted.append((index, agent_id, entrypoint, executor.get("options")))
    if not wanted:
        return []
    python_path = data.get("python_path")
    if isinstance(python_path, list) and all(isinstance(p, str) for p in python_path):
        add_import_roots(python_path, config_dir)
    else:
        add_import_roots([], config_dir)
    problems: list[tuple[Loc, str]] = []
    for index, agent_id, entrypoint, options in wanted:
        try:
            load_executor(agent_id, entrypoint, options if isinstance(options, dict) else None)
        except PluginError as exc:
            problems.append((("agents", index, "executor", "entrypoint"), str(exc)))
    return problems
