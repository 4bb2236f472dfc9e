"""The conformance report: one table in docs/conformance.md, each kit's counts and each of its
failures, with whose it is and the evidence. `make tck` and `make tck-v1` rewrite their kit's
rows and keep the other kit's.

A failure is the kit's only when it is listed in KIT_FAILURES with its evidence; any other
failure is reported as ours, to be fixed or explained here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPORT = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
BEGIN, END = "<!-- tck-table:begin -->", "<!-- tck-table:end -->"
HEADER = ("| kit | test | outcome | whose | evidence |\n"
          "|---|---|---|---|---|\n")
KIT_0_3, KIT_1_0 = "0.3", "1.0"

_MESSAGE_ID_REUSE = (
    "it sends one messageId again with different content; a messageId names one message, so "
    "the node refuses the second (\"messageId was already used with different content\"): "
    "the idempotency rule, kept on purpose (a retried send never starts a second task)"
)
# Requirement id (1.0) or test name (0.3) -> why the failure is the kit's, with the evidence.
KIT_FAILURES = {
    "CARD-STRUCT-001": (
        "its schema refuses the default card's 0.3 members, which A2A 1.0.1 §5.7 says a "
        "reader should ignore; the same card without them passes the kit's own validator "
        "(field by field below)"
    ),
    # 0.3, by test name
    "test_authenticated_extended_card_without_auth": (
        "the kit drops its own auth headers, but every request reaches the node through the "
        "run's proxy, which adds the peer's name and key (the kit cannot send them); the node "
        "refuses the method without them (401, -32003: tests/integration/"
        "test_extended_card.py::test_the_extended_card_is_behind_the_gates)"
    ),
    "test_invalid_authentication": (
        "the kit's own request is never sent: requests refuses its header value "
        "' invalid-token' (leading whitespace), so the test fails before reaching the node"
    ),
    "test_get_push_notification_config": (
        "the kit sets a config without an id, then gets the id \"default\"; a config set "
        "without an id takes the task's id, as the official a2a-sdk 0.3 does, so no config "
        "has the id \"default\" (getting it by the task's id answers it: "
        "tests/integration/test_push_configs_live.py)"
    ),
    "CORE-EXECUTION-MODE-001": _MESSAGE_ID_REUSE,
    "CORE-EXECUTION-MODE-002": _MESSAGE_ID_REUSE,
    "CORE-MULTI-001a": _MESSAGE_ID_REUSE,
    "CORE-MULTI-002a": _MESSAGE_ID_REUSE,
    "CORE-MULTI-003": _MESSAGE_ID_REUSE,
}
_REQUIREMENT = re.compile(r"\b([A-Z]+(?:-[A-Z]+)*-\d{3}[a-z]?)\b")
_FAILED_LINE = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$", re.M)
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?)")
_DURATION = re.compile(r" in \d+(\.\d+)?s\b")  # pytest's summary line ends with its time
MAX_EVIDENCE = 300


@dataclass(frozen=True)
class Failure:
    test: str  # the requirement id when the kit names one, else the test's id
    message: str


@dataclass(frozen=True)
class KitRun:
    kit: str
    counts: dict[str, int]
    failures: list[Failure]


def from_junit(kit: str, path: Path) -> KitRun:
    """A pytest JUnit XML report (the 1.0 kit's)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    for case in ElementTree.parse(path).iter("testcase"):
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        if failed is not None:
            counts["failed"] += 1
            message = failed.get("message") or ""
            found = _REQUIREMENT.search(message)
            name = found.group(1) if found else f"{case.get('classname')}::{case.get('name')}"
            failures.append(Failure(name, message))
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return KitRun(kit, counts, failures)


def from_pytest_output(kit: str, outputs: Iterable[str]) -> KitRun:
    """pytest's terminal output (the 0.3 kit's, one per category): the summary line's counts
    and the short summary's FAILED/ERROR lines."""
    counts: dict[str, int] = {}
    failures = []
    for output in outputs:
        lines = [line for line in output.splitlines()
                 if _COUNTS.search(line) and _DURATION.search(line)]
        if lines:
            for number, kind in _COUNTS.findall(lines[-1]):
                key = "failed" if kind.startswith("error") else kind
                counts[key] = counts.get(key, 0) + int(number)
        for _, test, message in _FAILED_LINE.findall(output):
            failures.append(Failure(test.rsplit("::", 1)[-1], message or ""))
    return KitRun(kit, counts, failures)


def whose(failure: Failure) -> tuple[str, str]:
    reason = KIT_FAILURES.get(failure.test)
    if reason is not None:
        return "the kit's", reason
    return "ours", _cell(failure.message, MAX_EVIDENCE) or "(no message)"


def _cell(text: str, limit: int | None = None) -> str:
    """One table cell: one line, no column separator, a kit's long message cut."""
    text = " ".join(text.split()).replace("|", "\\|")
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def rows(run: KitRun) -> list[str]:
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(run.counts.items()))
    ours = sum(1 for failure in run.failures if whose(failure)[0] == "ours")
    out = [f"| {run.kit} | all | {counts} | {ours} ours | |"]
    for failure in run.failures:
        owner, evidence = whose(failure)
        out.append(f"| {run.kit} | {failure.test} | failed | {owner} | {_cell(evidence)} |")
    return out


def update(run: KitRun, report: Path = REPORT) -> None:
    """Rewrite `run.kit`'s rows of the report's table, keeping the other kit's."""
    text = report.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        table, tail = rest.split(END, 1)
    else:
        head, table, tail = text.rstrip("\n") + "\n\n", "", "\n"
    kept = [line for line in table.splitlines()
            if line.startswith("| ") and not line.startswith(("| kit |", f"| {run.kit} |"))]
    ordered = sorted(kept + rows(run), key=lambda line: line.split("|")[1].strip())
    body = HEADER + "".join(line + "\n" for line in ordered)
    report.write_text(f"{head}{BEGIN}\n{body}{END}{tail}")
