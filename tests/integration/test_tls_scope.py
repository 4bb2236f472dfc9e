"""The node's HTTP server over TLS: the client certificate the handshake verified reaches the
app in the ASGI scope (`extensions.tls`), from the connection only, never from a header.

A real uvicorn with the node's protocol class and TLS options, on 127.0.0.1; the app answers
with what `client_certificate(scope)` found."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from examples.make_test_ca import Issued, issue, make_ca, self_signed, write_node
from synthorg.generated.models import ServerConfig
from synthorg.http import uvicorn_options
from synthorg.tls import pins
from synthorg.tls.context import (
    TlsFiles,
    client_certificate,
    client_context,
    problems,
    uvicorn_tls_options,
)

TIMEOUT = 10.0


class CertApp:
    def __init__(self) -> None:
        self.started = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                    self.started.set()
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        der = client_certificate(scope)
        tls = (scope.get("extensions") or {}).get("tls") or {}
        body = json.dumps({
            "scheme": scope["scheme"],
            "pin": pins.pin_of(der) if der else None,
            "chain": len(tls.get("client_cert_chain") or []),
        }).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


class Certs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ca = make_ca()
        (root / "ca.pem").write_bytes(self.ca.pem)
        self.node_a = self.write("node-a", issue(self.ca, "node-a"))
        self.node_b = self.write("node-b", issue(self.ca, "node-b"))
        self.stranger = self.write("stranger", self_signed("node-b"))

    def write(self, name: str, issued: Issued) -> Issued:
        write_node(self.root, name, issued)
        return issued

    def files(self, name: str, ca: bool = True) -> TlsFiles:
        return TlsFiles(self.root / f"{name}.pem", self.root / f"{name}.key",
                        self.root / "ca.pem" if ca else None)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def server(certs: Certs) -> Iterator[str]:
    app = CertApp()
    options = {**uvicorn_options(ServerConfig()), **uvicorn_tls_options(certs.files("node-b"))}
    config = uvicorn.Config(app, lifespan="on", log_level="warning", **options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert app.started.wait(TIMEOUT)
    try:
        yield f"https://127.0.0.1:{port}/"
    finally:
        running.should_exit = True
        thread.join(TIMEOUT)
        sock.close()


def get(url: str, verify: ssl.SSLContext, headers: dict[str, str] | None = None) -> Any:
    with httpx.Client(verify=verify, timeout=TIMEOUT) as client:
        response = client.get(url, headers=headers)
    assert response.status_code == 200
    return response.json()


def anonymous(certs: Certs) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certs.root / "ca.pem")


def test_a_verified_client_certificate_is_in_the_scope(certs: Certs, server: str) -> None:
    context = client_context(certs.files("node-a"))
    assert context is not None
    assert get(server, context) == {"scheme": "https", "pin": certs.node_a.pin, "chain": 1}


def test_a_client_without_a_certificate_is_served_without_one(certs: Certs,
                                                              server: str) -> None:
    assert get(server, anonymous(certs)) == {"scheme": "https", "pin": None, "chain": 0}


def test_no_header_puts_a_certificate_in_the_scope(certs: Certs, server: str) -> None:
    forged = certs.node_a.pem.decode().replace("\n", "")
    headers = {"x-client-cert": forged, "ssl-client-cert": forged,
               "x-forwarded-client-cert": f"Hash={certs.node_a.pin}"}
    assert get(server, anonymous(certs), headers)["pin"] is None


def test_a_certificate_no_trusted_ca_signed_fails_the_handshake(certs: Certs,
                                                                server: str) -> None:
    context = anonymous(certs)
    context.load_cert_chain(certs.root / "stranger.pem", certs.root / "stranger.key")
    with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
        get(server, context)


def test_the_files_are_checked_as_the_node_would_load_them(certs: Certs) -> None:
    assert problems(certs.files("node-a")) == []
    missing = TlsFiles(certs.root / "nope.pem", certs.root / "node-a.key", None)
    assert [key for key, _ in problems(missing)] == ["cert_file"]
    mismatched = TlsFiles(certs.root / "node-a.pem", certs.root / "node-b.key", None)
    assert [key for key, _ in problems(mismatched)] == ["key_file"]
    not_a_ca = TlsFiles(certs.root / "node-a.pem", certs.root / "node-a.key",
                        certs.root / "node-a.key")
    assert [key for key, _ in problems(not_a_ca)] == ["ca_file"]
