"""A client of a node's admin API, for `synthorg-a2a settings|peers ... --url URL`.

The admin token goes in `Authorization: Bearer` and nowhere else: never in a URL, an error
message or a log line; redirects are not followed (a redirect target would get the token) and
the environment's proxy and .netrc settings are not consulted. An https node is verified
against the system's CAs, plus a private CA when the operator names one (`trusting`).
"""

from __future__ import annotations

import ipaddress
import json
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from synthorg.generated.constants import MEDIA_TYPE_APPLICATION_JSON
from synthorg.store.catalog import canonical_endpoint

ADMIN_PATH = "/api/v1/admin"
DEFAULT_TIMEOUT = 30.0
USER_AGENT = "synthorg-a2a-cli"


class AdminUnreachable(Exception):
    """No HTTP answer (connection refused, timeout, TLS failure, ...)."""


class AdminRefused(Exception):
    """An HTTP answer other than the expected one; `error` and `message` from its AdminError
    body when it has one."""

    def __init__(self, status: int, error: str | None, message: str,
                 key: str | None = None, allowed: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.key = key
        self.allowed = allowed


def node_url(url: str) -> str:
    """The node's base URL: absolute http(s), no credentials, query or fragment (ValueError)."""
    try:
        return canonical_endpoint(url)
    except ValueError:
        raise ValueError(
            "--url must be the node's absolute http(s) base URL without credentials, query or "
            "fragment, e.g. http://127.0.0.1:8000"
        ) from None


def trusting(ca_file: Path) -> ssl.SSLContext:
    """The system's trusted roots plus the PEM CA certificates in `ca_file` (a node serving
    TLS with a private CA); ValueError saying why the file cannot be used."""
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=ca_file)
    except FileNotFoundError:
        raise ValueError(f"{ca_file}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        reason = (getattr(exc, "reason", None) or getattr(exc, "strerror", None)
                  or type(exc).__name__)
        raise ValueError(f"{ca_file}: not PEM CA certificates ({reason})") from None
    return context


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sends_token_in_clear(url: str) -> bool:
    """Plain HTTP to a host that is not loopback: the token crosses the network unencrypted."""
    parts = urlsplit(url)
    return parts.scheme.lower() == "http" and not _is_loopback(parts.hostname or "")


class AdminClient:
    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None,
                 verify: ssl.SSLContext | None = None) -> None:
        """`verify`: what an https node is verified with (`trusting`); None: the system's
        CAs."""
        self._base = node_url(base_url) + ADMIN_PATH
        self._headers = {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}
        self._timeout = timeout
        self._transport = transport
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True

    def __repr__(self) -> str:
        return f"AdminClient({self._base!r}, <token redacted>)"

    def _call(self, method: str, path: str, expected: int, body: Any = None) -> Any:
        content = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if content is not None:
            headers["Content-Type"] = MEDIA_TYPE_APPLICATION_JSON
        try:
            with httpx.Client(timeout=self._timeout, trust_env=False, follow_redirects=False,
                              transport=self._transport, verify=self._verify) as http:
                response = http.request(method, self._base + path, content=content,
                                        headers=headers)
        except httpx.HTTPError as exc:
            raise AdminUnreachable(f"{type(exc).__name__}: {exc}") from None
        if response.status_code == expected:
            return None if expected == 204 else _json(response)
        raise _refused(response)

    # -- settings
    def list_settings(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/settings", 200)["settings"])

    def get_setting(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/settings/{_segment(name)}", 200))

    def set_setting(self, name: str, value: float | int) -> dict[str, Any]:
        return dict(self._call("PUT", f"/settings/{_segment(name)}", 200, {"value": value}))

    def reset_setting(self, name: str) -> dict[str, Any]:
        return dict(self._call("DELETE", f"/settings/{_segment(name)}", 200))

    # -- peers
    def list_peers(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/peers", 200)["peers"])

    def get_peer(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/peers/{_segment(name)}", 200))

    def create_peer(self, name: str, endpoint: str, scheme: str, secret: str) -> dict[str, Any]:
        body = {"name": name, "endpoint": endpoint, "scheme": scheme, "secret": secret}
        return dict(self._call("POST", "/peers", 201, body))

    def replace_peer(self, name: str, endpoint: str, scheme: str, secret: str
                     ) -> dict[str, Any]:
        body = {"endpoint": endpoint, "scheme": scheme, "secret": secret}
        return dict(self._call("PUT", f"/peers/{_segment(name)}", 200, body))

    def set_peer_rate_limit(self, name: str, per_second: float | None) -> dict[str, Any]:
        body = {"rateLimit": per_second}
        return dict(self._call("PUT", f"/peers/{_segment(name)}/rate-limit", 200, body))

    def set_peer_card_key(self, name: str, card_key: str | None) -> dict[str, Any]:
        body = {"cardKey": card_key}
        return dict(self._call("PUT", f"/peers/{_segment(name)}/card-key", 200, body))

    def set_peer_binding(self, name: str, binding: str | None) -> dict[str, Any]:
        body = {"binding": binding}
        return dict(self._call("PUT", f"/peers/{_segment(name)}/binding", 200, body))

    def delete_peer(self, name: str) -> None:
        self._call("DELETE", f"/peers/{_segment(name)}", 204)

    def status(self) -> dict[str, Any]:
        return dict(self._call("GET", "/status", 200))


def _segment(value: str) -> str:
    return quote(value, safe="")


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise AdminRefused(response.status_code, None,
                           f"the node answered HTTP {response.status_code} without JSON"
                           ) from None


def _refused(response: httpx.Response) -> AdminRefused:
    status = response.status_code
    try:
        document = response.json()
    except ValueError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        return AdminRefused(status, document.get("error"), document["message"],
                            document.get("key"), document.get("allowed"))
    return AdminRefused(status, None, f"the node answered HTTP {status}")
