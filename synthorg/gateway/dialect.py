"""Which dialect a request speaks: the `A2A-Version` header and the method name decide.

| A2A-Version      | methods served                                              |
|------------------|-------------------------------------------------------------|
| absent           | 0.3 (absent means 0.3), and the 1.0 methods by their names  |
| 0.3 (or 0.3.x)   | the 0.3 methods                                             |
| 1.0 (or 1.0.x)   | the 1.0 methods                                             |
| anything else    | none: -32009 VersionNotSupported                            |

The method names of the two dialects are distinct (`message/send`, `SendMessage`), so a
request without the header is routed by its method alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import TypeAdapter

from synthorg.gateway.dispatch import (
    DISPATCH,
    DISPATCH_V1,
    PARAMS_ADAPTER,
    PARAMS_ADAPTER_V1,
    Route,
)
from synthorg.generated.constants import A2A_VERSION_0_3, A2A_VERSION_1_0, A2A_VERSIONS
from synthorg.http.version import major_minor


class Dialect(NamedTuple):
    version: str
    routes: Mapping[str, Route]
    params: TypeAdapter[Any]


V03 = Dialect(A2A_VERSION_0_3, DISPATCH, PARAMS_ADAPTER)
V1 = Dialect(A2A_VERSION_1_0, DISPATCH_V1, PARAMS_ADAPTER_V1)
_BY_VERSION = {dialect.version: (dialect,) for dialect in (V03, V1)}
_UNVERSIONED = (V03, V1)
assert set(_BY_VERSION) == A2A_VERSIONS


def dialects(version: str | None) -> tuple[Dialect, ...] | None:
    """The dialects a request may speak, given its A2A-Version; None: unsupported."""
    if version is None:
        return _UNVERSIONED
    found = major_minor(version)
    return None if found is None else _BY_VERSION.get(found)


def speaks_v1(version: str | None) -> bool:
    """Whether an A2A-Version header names the 1.0 dialect: the dialect of a refusal made
    before the method routes the request (1.0's error.data then, `dialects/errors.py`)."""
    return version is not None and major_minor(version) == A2A_VERSION_1_0


def route(allowed: tuple[Dialect, ...], method: str) -> tuple[Route, Dialect] | None:
    for dialect in allowed:
        found = dialect.routes.get(method)
        if found is not None:
            return found, dialect
    return None
