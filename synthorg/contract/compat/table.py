"""Presenting a report: the table `spec check` prints."""

from __future__ import annotations

from synthorg.contract.compat.report import CompatReport


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
