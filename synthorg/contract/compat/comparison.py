"""The comparison: a peer's document against ours, method by method (we are the caller)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synthorg.contract.compat.document import Document, Unresolvable
from synthorg.contract.compat.report import (
    CompatReport,
    DocumentInfo,
    Finding,
    MethodCompat,
    SpecShapeError,
)
from synthorg.contract.compat.rpc import RESULTS, Rpc, read_rpc
from synthorg.contract.compat.schemas import REQUEST, RESULT, Comparison
from synthorg.generated.constants import (
    AGENT_GET_AUTHENTICATED_EXTENDED_CARD,
    MESSAGE_STREAM,
    METHODS_V1,
    SKILLS_NEGOTIATE,
    SKILLS_QUERY,
    TASKS_PUSH_NOTIFICATION_CONFIG_DELETE,
    TASKS_PUSH_NOTIFICATION_CONFIG_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_LIST,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET,
    TASKS_RESUBSCRIBE,
)

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


def compare_specs(ours: Mapping[str, Any], peer: Mapping[str, Any]) -> CompatReport:
    """Compare a peer's OpenAPI document with ours, method by method (we are the caller).

    Raises SpecShapeError when `peer` is not an OpenAPI 3 document."""
    if not isinstance(peer, Mapping) or not str(peer.get("openapi", "")).startswith("3."):
        raise SpecShapeError("not an OpenAPI 3 document (no 'openapi: 3.x' member)")
    our_doc, peer_doc = Document(ours), Document(peer)
    report = CompatReport(DocumentInfo.of(ours), DocumentInfo.of(peer), [], [], [])
    our_rpc = read_rpc(our_doc, "our")
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
        peer_rpc = read_rpc(peer_doc, "the peer's")
    except SpecShapeError as exc:
        report.general.append(Finding("error", "", str(exc)))
        peer_rpc = Rpc({}, [])
    except Unresolvable as exc:
        report.general.append(Finding("error", "", f"cannot resolve the peer's $ref {exc.ref!r}"))
        peer_rpc = Rpc({}, [])
    for method, our_request in our_rpc.requests.items():
        report.methods.append(
            _compare_method(method, our_request, our_rpc, our_doc, peer_rpc, peer_doc)
        )
    report.peer_only = sorted(set(peer_rpc.requests) - set(our_rpc.requests))
    return report


def _compare_method(
    method: str,
    our_request: Any,
    our_rpc: Rpc,
    our_doc: Document,
    peer_rpc: Rpc,
    peer_doc: Document,
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
    request = Comparison(our_doc, peer_doc, REQUEST)
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
    result = Comparison(peer_doc, our_doc, RESULT)
    result.compare(theirs, ours, "result")
    entry.result = result.findings
    return entry


def _peer_result(name: str, rpc: Rpc, document: Document) -> Any:
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

