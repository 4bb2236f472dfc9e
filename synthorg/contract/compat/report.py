"""What a comparison reports: findings, each method's verdict, the whole report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]
Status = Literal["ok", "warning", "incompatible", "-"]


class SpecShapeError(Exception):
    """The document is not an OpenAPI document this comparison can read."""


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

