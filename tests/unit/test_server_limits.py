"""The HTTP server's limits: documented on every operation and handed to uvicorn (live
behaviour: tests/integration/test_hostile_http.py)."""

from __future__ import annotations

from typing import Any

from synthorg.contract.spec import bundled_openapi
from synthorg.generated.models import ServerConfig
from synthorg.http import uvicorn_options
from synthorg.http.limits import ServerLimits
from synthorg.http.protocol import LimitedHttpToolsProtocol

REFUSALS = {
    "408": "RequestTimeout",
    "431": "HeaderFieldsTooLarge",
    "503": "TooManyConnections",
}
METHODS = {"get", "put", "post", "delete", "patch"}


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, item in bundled_openapi()["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def test_every_operation_documents_the_server_refusals() -> None:
    assert len(operations()) >= 14
    for path, method, op in operations():
        for status, name in REFUSALS.items():
            if (path, status) == ("/readyz", "503"):  # its own 503 (not ready) covers both
                own = op["responses"][status]
                assert name in own["description"]
                schemas = own["content"]["application/json"]["schema"]["oneOf"]
                assert any(s["$ref"].endswith("/JsonRpcErrorResponse") for s in schemas)
                continue
            assert op["responses"][status] == {"$ref": f"#/components/responses/{name}"}, (
                path,
                method,
                status,
            )


def test_the_server_refusals_are_json_rpc_error_envelopes_with_connection_close() -> None:
    document = bundled_openapi()
    for name in REFUSALS.values():
        response = document["components"]["responses"][name]
        schema = response["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith("/JsonRpcErrorResponse")
        assert "Connection" in response["headers"]
    assert "Retry-After" in document["components"]["responses"]["TooManyConnections"]["headers"]
    assert "431" in document["info"]["description"]


def test_uvicorn_gets_a_protocol_bound_to_the_configured_limits() -> None:
    config = ServerConfig(max_connections=7, keepalive_timeout_seconds=2.5)
    default = LimitedHttpToolsProtocol.limits
    try:
        options = uvicorn_options(config)
        check_options(options, config)
    finally:
        LimitedHttpToolsProtocol.limits = default


def check_options(options: dict[str, Any], config: ServerConfig) -> None:
    protocol = options["http"]
    assert issubclass(protocol, LimitedHttpToolsProtocol)
    assert protocol.limits == ServerLimits.from_config(config)
    assert protocol.limits.max_connections == 7
    assert options["timeout_keep_alive"] == 2.5
    assert options["log_config"] is None  # uvicorn's records go through the event stream
    assert options["ws"] == "none"
    # The class itself, bound for this process: worker processes can be handed it.
    assert protocol is LimitedHttpToolsProtocol
