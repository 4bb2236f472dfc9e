"""The bench's report: the summary tables, the goal checks and the JSON record.

Ratios are taken within one run (absolute figures swing between runs and machines): req/s
against the floor, and against the a2a-sdk row of the same method (tasks/get and message/send:
the 0.3 SDK; GetTask: the 1.3.0 SDK).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.hostile import HostileResult
from bench.wrk import WrkResult

HOSTILE_LIMIT_MIB = 2.0
OTHERS_LIMIT = 0.10  # other work on the server's CPU beyond this is noted


@dataclass
class Row:
    name: str
    server: str
    kind: str  # the launcher's kind: floor, sdk, node
    method: str
    expect_status: int = 200
    probe: str = ""
    result: WrkResult | None = None
    server_cpu: float = float("nan")  # server CPU time over the run's duration
    others_cpu: float = float("nan")  # the server's CPU busy with others, or stolen, likewise
    tasks_created: int | None = None  # node message/send: a2a.task.created events in the run
    error: str | None = None

    def per_cpu_second(self) -> float:
        """Requests answered per CPU-second of the server: its cost, whatever else ran."""
        if self.result is None or not self.server_cpu > 0:
            return float("nan")
        return self.result.rps / self.server_cpu

    def busy(self) -> bool:
        return self.others_cpu >= OTHERS_LIMIT

    def unexpected(self) -> int:
        """Answers without the expected status, plus socket errors and timeouts."""
        assert self.result is not None
        errors = self.result.errors
        sockets = errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]
        if self.expect_status < 400:
            return errors["status"] + sockets
        return self.result.requests - errors["status"] + sockets  # wrk counts >= 400 only


@dataclass
class Check:
    goal: str
    passed: bool | None  # None: could not be evaluated (a row did not run)
    detail: str

    def line(self) -> str:
        verdict = {True: "PASS", False: "FAIL", None: "SKIP"}[self.passed]
        return f"{verdict}  {self.goal}: {self.detail}"


def floor_row(rows: list[Row]) -> Row | None:
    return next((r for r in rows if r.kind == "floor" and r.result), None)


def sdk_row(rows: list[Row], method: str) -> Row | None:
    return next((r for r in rows if r.kind == "sdk" and r.method == method and r.result), None)


def floor_rps(rows: list[Row]) -> float | None:
    row = floor_row(rows)
    return row.result.rps if row and row.result else None


def sdk_rps(rows: list[Row], method: str) -> float | None:
    row = sdk_row(rows, method)
    return row.result.rps if row and row.result else None


def _ratio(value: float, base: float | None) -> float | None:
    return value / base if base else None


def _or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None or math.isnan(value) else format(value, spec)


def table(rows: list[Row]) -> str:
    head = (f"{'scenario':<30} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'mean ms':>7} "
            f"{'p99/mean':>8} {'x floor':>7} {'x sdk':>6} {'errors':>6} {'wrk cpu':>7} "
            f"{'srv cpu':>7} {'others':>6} {'req/cpu-s':>9}")
    lines = [head, "-" * len(head)]
    floor = floor_rps(rows)
    for row in rows:
        if row.result is None:
            lines.append(f"{row.name:<30} could not run: {row.error}")
            continue
        r = row.result
        lat = r.latency_us
        vs_sdk = None if row.kind == "sdk" else _ratio(r.rps, sdk_rps(rows, row.method))
        lines.append(
            f"{row.name:<30} {r.rps:>8.0f} {lat['p50'] / 1000:>7.2f} {lat['p99'] / 1000:>7.2f} "
            f"{lat['mean'] / 1000:>7.2f} {r.ratio_p99_mean():>8.2f} "
            f"{_fmt(_ratio(r.rps, floor), '.2f'):>7} {_fmt(vs_sdk, '.2f'):>6} "
            f"{row.unexpected():>6} {r.wrk_cpu:>7.0%} {_fmt(row.server_cpu, '.0%'):>7} "
            f"{_fmt(row.others_cpu, '.0%'):>6} {_fmt(row.per_cpu_second(), '.0f'):>9}"
        )
    return "\n".join(lines)


def hostile_table(results: list[HostileResult]) -> str:
    head = (f"{'hostile body (100 MiB)':<34} {'answers':<8} {'answered after':>14} "
            f"{'sent':>9} {'closed':>6} {'RSS before':>10} {'after':>9} {'growth':>9}")
    lines = [head, "-" * len(head)]
    for h in results:
        answered = "-" if h.answered_after is None else f"{h.answered_after / 1024:.0f} KiB"
        lines.append(
            f"{h.case:<34} {','.join(map(str, h.statuses)) or 'none':<8} {answered:>14} "
            f"{h.sent / 2**20:>5.1f} MiB {'yes' if h.closed_by_server else 'no':>6} "
            f"{h.rss_before_kib / 1024:>6.1f} MiB {h.rss_after_kib / 1024:>5.1f} MiB "
            f"{h.growth_mib:>5.2f} MiB"
        )
    return "\n".join(lines)


def checks(rows: list[Row], hostile: dict[str, list[HostileResult]]) -> list[Check]:
    found: list[Check] = []
    floor = floor_row(rows)

    def against(goal: str, row: Row, base: Row | None, base_name: str, least: float) -> None:
        if row.result is None or base is None or base.result is None:
            found.append(Check(goal, None, f"{row.name} or {base_name} did not run"))
            return
        ratio = row.result.rps / base.result.rps
        detail = f"{ratio:.2f}x ({row.result.rps:.0f} vs {base.result.rps:.0f} req/s)"
        busy = [r for r in (row, base) if r.busy()]
        if busy:
            taken = ", ".join(f"{r.others_cpu:.0%} on {r.name}" for r in busy)
            detail += (f"; unreliable, other work took the server's CPU ({taken}); per server "
                       f"CPU-second {row.per_cpu_second() / base.per_cpu_second():.2f}x")
        found.append(Check(goal, ratio >= least, detail))

    def tail(row: Row) -> None:
        goal = f"{row.name} p99 <= 2x mean"
        if row.result is None:
            found.append(Check(goal, None, "did not run"))
            return
        ratio = row.result.ratio_p99_mean()
        lat = row.result.latency_us
        detail = (f"p99/mean {ratio:.2f} (p99 {lat['p99'] / 1000:.2f} ms, mean "
                  f"{lat['mean'] / 1000:.2f} ms)")
        if row.busy():
            detail += f"; unreliable, other work took {row.others_cpu:.0%} of the server's CPU"
        found.append(Check(goal, ratio <= 2.0, detail))

    for row in (r for r in rows if r.server == "node-pg"):  # the replica goals, one replica
        if row.method == "tasks/get":
            against(f"{row.name} >= 2x a2a-sdk tasks/get", row, sdk_row(rows, "tasks/get"),
                    "a2a-sdk tasks/get", 2.0)
        elif row.method == "message/send":
            against(f"{row.name} >= 1x a2a-sdk message/send", row,
                    sdk_row(rows, "message/send"), "a2a-sdk message/send", 1.0)
    observed = {r.server: r for r in rows if r.server.startswith("node-obs-")}
    off = observed.get("node-obs-off")
    for name, goal in (("node-obs-on", "1% sampled"), ("node-obs-all", "all sampled")):
        if name in observed:
            against(f"tasks/get with metrics+traces on ({goal}) >= 0.9x both off",
                    observed[name], off, "node-obs-off", 0.9)
    for row in (r for r in rows if r.kind == "node" and r.server == "node"):
        if row.method == "tasks/get":
            against(f"{row.name} >= 0.5x floor", row, floor, "floor", 0.5)
            tail(row)
        elif row.method == "message/send":
            against(f"{row.name} >= 5x a2a-sdk message/send", row,
                    sdk_row(rows, "message/send"), "a2a-sdk message/send", 5.0)
            tail(row)
        elif row.method == "GetTask":  # A2A 1.0, against the 1.3.0 SDK's JSON-RPC
            against(f"{row.name} >= 3x a2a-sdk 1.3.0 GetTask", row, sdk_row(rows, "GetTask"),
                    "a2a-sdk 1.3.0 GetTask", 3.0)
        elif row.method == "refused":
            against(f"{row.name} >= 0.8x floor", row, floor, "floor", 0.8)
    for server, results in hostile.items():
        for h in results:
            found.append(Check(
                f"{server}: hostile body ({h.case}) RSS growth < {HOSTILE_LIMIT_MIB:g} MiB",
                h.growth_mib < HOSTILE_LIMIT_MIB,
                f"{h.growth_mib:.2f} MiB (peak from {h.peak_from}), answered "
                f"{','.join(map(str, h.statuses)) or 'nothing'}",
            ))
    return found


def notes(rows: list[Row]) -> list[str]:
    """What a reader should know before trusting a row."""
    found = []
    for row in rows:
        if row.result is None:
            continue
        if row.unexpected():
            found.append(f"{row.name}: {row.unexpected()} of {row.result.requests} answers "
                         "were not the expected status or failed at the socket")
        if row.tasks_created is not None and row.tasks_created < row.result.requests:
            found.append(f"{row.name}: {row.result.requests} requests created only "
                         f"{row.tasks_created} tasks: messageIds were reused")
        if row.busy():
            found.append(f"{row.name}: other work took {row.others_cpu:.0%} of the server's "
                         f"CPU (the server got {row.server_cpu:.0%}): this row is held down "
                         "by a busy machine")
        if row.result.wrk_cpu >= 0.9:
            found.append(f"{row.name}: wrk used {row.result.wrk_cpu:.0%} of its CPU: the load "
                         "generator may be the limit on this row")
    return found


def to_json(settings: dict[str, Any], rows: list[Row],
            hostile: dict[str, list[HostileResult]], found: list[Check]) -> dict[str, Any]:
    def row_json(row: Row) -> dict[str, Any]:
        out: dict[str, Any] = {"name": row.name, "server": row.server, "kind": row.kind,
                               "method": row.method, "expect_status": row.expect_status,
                               "probe": row.probe, "error": row.error}
        if row.result is not None:
            r = row.result
            out |= {"requests": r.requests, "seconds": r.seconds, "rps": r.rps,
                    "latency_us": r.latency_us, "p99_over_mean": r.ratio_p99_mean(),
                    "wrk_errors": r.errors, "unexpected": row.unexpected(),
                    "x_floor": _ratio(r.rps, floor_rps(rows)),
                    "x_sdk": None if row.kind == "sdk"
                    else _ratio(r.rps, sdk_rps(rows, row.method)),
                    "wrk_cpu": r.wrk_cpu, "tasks_created": row.tasks_created,
                    "server_cpu": _or_none(row.server_cpu),
                    "others_cpu": _or_none(row.others_cpu),
                    "per_server_cpu_second": _or_none(row.per_cpu_second())}
        return out

    return {
        "settings": settings,
        "rows": [row_json(row) for row in rows],
        "hostile": {server: [{**vars(h), "growth_mib": h.growth_mib} for h in results]
                    for server, results in hostile.items()},
        "checks": [{"goal": c.goal, "passed": c.passed, "detail": c.detail} for c in found],
    }
