"""`synthorg-a2a config check`: every problem in a company YAML at once, with line numbers.

The node itself stops at the first problem (one clear line); an operator editing the file
wants the whole list. Both use the same checks (`find_problems`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from synthorg.config.company import Loc, find_problems, format_loc


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


def check_text(text: str) -> list[Finding]:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = f"not valid YAML ({getattr(exc, 'problem', None) or 'syntax error'})"
        return [Finding(mark.line + 1 if mark else None, "(file)", problem)]
    problems, _ = find_problems(data)
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
    return check_text(text)
