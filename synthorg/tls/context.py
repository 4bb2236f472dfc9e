"""HTTPS for the node (config.yaml's `server.tls`), and the client certificate it is shown.

Served: the node's certificate and key; with `ca_file`, every client is asked for a
certificate (CERT_OPTIONAL: a peer with a secret connects without one), and one that is sent
must verify against those CAs or the handshake fails. The verified leaf reaches the app in the
ASGI scope only (`scope["extensions"]["tls"]`, the ASGI TLS extension), taken from the
connection's own TLS object, never from a header.

Outbound: the same certificate and key are the node's client certificate on its calls to
peers, which trust `ca_file` besides the system's CAs.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import certifi
import grpc

from synthorg.generated.models import ServerTlsConfig

MINIMUM_VERSION = ssl.TLSVersion.TLSv1_2


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path
    ca: Path | None  # None: no client certificate is asked for


def tls_files(config: ServerTlsConfig | None, config_dir: Path) -> TlsFiles | None:
    """The files `server.tls` names, a relative path taken from the config file's directory."""
    if config is None:
        return None

    def resolve(raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else config_dir / path

    return TlsFiles(resolve(config.cert_file), resolve(config.key_file),
                    resolve(config.ca_file) if config.ca_file else None)


def problems(files: TlsFiles) -> list[tuple[str, str]]:
    """(key, problem) for each file that cannot serve: missing, unreadable, not PEM, a key
    that is not the certificate's. Never the files' contents."""
    found: list[tuple[str, str]] = []
    for key, path in (("cert_file", files.cert), ("key_file", files.key),
                      ("ca_file", files.ca)):
        if path is not None and not path.is_file():
            found.append((key, f"{path}: no such file"))
    if found:
        return found
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(files.cert, files.key)
    except (ssl.SSLError, OSError) as exc:
        found.append(("key_file", f"{files.cert} and {files.key} are not a PEM certificate "
                      f"and its unencrypted private key ({_reason(exc)})"))
    if files.ca is not None:
        try:
            context.load_verify_locations(cafile=files.ca)
        except (ssl.SSLError, OSError) as exc:
            found.append(("ca_file", f"{files.ca}: not PEM CA certificates ({_reason(exc)})"))
    return found


def _reason(exc: Exception) -> str:
    return getattr(exc, "reason", None) or type(exc).__name__


def server_context(files: TlsFiles) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_VERSION
    context.load_cert_chain(files.cert, files.key)
    if files.ca is not None:
        context.load_verify_locations(cafile=files.ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def uvicorn_tls_options(files: TlsFiles | None) -> dict[str, Any]:
    """`uvicorn.Config` keywords: the files, and the factory that builds the context from them
    (a module-level function, so worker processes can be handed it)."""
    if files is None:
        return {}
    return {
        "ssl_certfile": str(files.cert),
        "ssl_keyfile": str(files.key),
        "ssl_ca_certs": str(files.ca) if files.ca is not None else None,
        "ssl_context_factory": _uvicorn_context,
    }


def _uvicorn_context(config: Any, _default: Any) -> ssl.SSLContext:
    ca = config.ssl_ca_certs
    return server_context(TlsFiles(Path(config.ssl_certfile), Path(config.ssl_keyfile),
                                   Path(ca) if ca else None))


def client_context(files: TlsFiles | None) -> ssl.SSLContext | None:
    """What outbound calls to peers verify with and present; None: httpx's defaults."""
    if files is None:
        return None
    context = ssl.create_default_context()
    context.minimum_version = MINIMUM_VERSION
    if files.ca is not None:
        context.load_verify_locations(cafile=files.ca)
    context.load_cert_chain(files.cert, files.key)
    return context


@functools.cache
def public_trust() -> ssl.SSLContext:
    """What outbound HTTPS calls verify with when the node has no `server.tls`: the public
    CAs httpx trusts (certifi's), loaded once per process. httpx's `verify=True` loads the
    bundle again for each client, tens of milliseconds a call; a context is safe to share."""
    context = ssl.create_default_context(cafile=certifi.where())
    context.minimum_version = MINIMUM_VERSION
    return context


def grpc_client_credentials(files: TlsFiles | None) -> grpc.ChannelCredentials | None:
    """The same for a gRPC channel: the node's certificate presented, `ca_file` trusted
    beside the public CAs httpx trusts (certifi's; grpc takes one bundle of roots). None:
    gRPC's defaults."""
    if files is None:
        return None
    roots = Path(certifi.where()).read_bytes()
    if files.ca is not None:
        roots += b"\n" + files.ca.read_bytes()
    return grpc.ssl_channel_credentials(
        root_certificates=roots, private_key=files.key.read_bytes(),
        certificate_chain=files.cert.read_bytes(),
    )


# -- the ASGI scope ----------------------------------------------------------------------------

def scope_extension(transport: asyncio.BaseTransport) -> dict[object, object] | None:
    """The ASGI TLS extension for a connection, or None when it is not TLS. The client's
    certificate is there only if it sent one, which the handshake verified."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": None,
        "cipher_suite": None,
        "client_cert_der": der or None,  # the leaf as sent, for the peer gate's pin check
    }


def client_certificate(scope: Mapping[str, Any]) -> bytes | None:
    """The verified client certificate (DER) the connection presented, else None."""
    tls = (scope.get("extensions") or {}).get("tls")
    if not isinstance(tls, Mapping):
        return None
    der = tls.get("client_cert_der")
    return der if isinstance(der, bytes) and der else None
