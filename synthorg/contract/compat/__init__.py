"""Is a peer's published contract compatible with ours? (`synthorg-a2a spec check`)

This node is the caller: for each JSON-RPC method of our contract the comparison asks whether
the peer's OpenAPI document offers it on the path our client calls (``POST /api/v1/a2a/``),
whether the peer accepts the request we send (envelope and params: every member the peer
requires is one we send, every member we send is one the peer knows or tolerates, types and
``const``/``enum`` values overlap, lengths and ranges fit), and whether we can read the result
the peer returns (every member we require is there, nothing the peer sends is refused by our
strict models, types and values fit).

Each difference is a `Finding`: an ``error`` means some call will fail, a ``warning`` means
some calls may (a value range narrower on one side, an optional member the other side
requires, a method of the SynthOrg skills extension the peer lacks). Only local ``#/...``
references are followed; a published document is bundled, so that is all a peer should need.

OpenAPI has no place for "method X returns result Y" in a JSON-RPC union; our spec names it
(`<Name>Params` answers `<Name>Result`, generated as `RESULT_DEFINITIONS`), and the peer's
result is the member of its result union with the same name.
"""

from __future__ import annotations

from synthorg.contract.compat.comparison import OPTIONAL_METHODS, compare_specs
from synthorg.contract.compat.report import (
    CompatReport,
    DocumentInfo,
    Finding,
    MethodCompat,
    Severity,
    SpecShapeError,
    Status,
)
from synthorg.contract.compat.rpc import RESULTS, RPC_PATH
from synthorg.contract.compat.schemas import REQUEST, RESULT
from synthorg.contract.compat.table import render_table

__all__ = [
    "OPTIONAL_METHODS",
    "REQUEST",
    "RESULT",
    "RESULTS",
    "RPC_PATH",
    "CompatReport",
    "DocumentInfo",
    "Finding",
    "MethodCompat",
    "Severity",
    "SpecShapeError",
    "Status",
    "compare_specs",
    "render_table",
]
