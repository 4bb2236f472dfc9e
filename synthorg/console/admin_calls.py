"""The admin operations, called in process: the console runs the admin API the CLI uses.

Each call goes to the operation's endpoint (the table `synthorg.web.endpoints` builds) as an
admitted admin request would, so the console answers with the operations' own validation,
refusal messages and audit records and keeps no second copy of any rule. The browser's
session stands in for the bearer token: the console signed the operator in with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from synthorg.admin.gate import SCOPE_ADMIN, SCOPE_ADMIN_BODY
from synthorg.generated.constants import MEDIA_TYPE_APPLICATION_JSON, Operation
from synthorg.web.router import Endpoint


@dataclass(frozen=True)
class Answer:
    status: int
    document: Any  # the JSON answer; None for an empty one

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The refusal's message (an AdminError's `message`)."""
        if isinstance(self.document, dict):
            return str(self.document.get("message", ""))
        return ""


class AdminCalls:
    def __init__(self, endpoints: Mapping[Operation, Endpoint]) -> None:
        self._endpoints = endpoints

    async def call(self, operation: Operation, *, client: str | None,
                   params: Mapping[str, str] | None = None, body: Any = None,
                   query: Mapping[str, str] | None = None) -> Answer:
        response = await self.respond(operation, client=client, params=params, body=body,
                                      query=query)
        raw = bytes(response.body) if hasattr(response, "body") else b""
        return Answer(response.status_code, json.loads(raw) if raw else None)

    async def respond(self, operation: Operation, *, client: str | None,
                      params: Mapping[str, str] | None = None, body: Any = None,
                      query: Mapping[str, str] | None = None) -> Response:
        """The operation's own response (a stream stays a stream)."""
        params = dict(params or {})
        path = operation.path
        for name, value in params.items():
            path = path.replace("{" + name + "}", value)
        raw = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        scope: dict[str, Any] = {
            "type": "http", "method": operation.method, "path": path,
            "query_string": urlencode(query or {}).encode("ascii"),
            "headers": ([(b"content-type", MEDIA_TYPE_APPLICATION_JSON.encode())]
                        if body is not None else []),
            "client": (client, 0) if client else None,
            SCOPE_ADMIN: True,
            SCOPE_ADMIN_BODY: raw,
        }
        return await self._endpoints[operation](scope, params)
