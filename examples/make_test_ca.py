"""A test CA and node certificates for mutual TLS between nodes (for trying it out and tests).

    python -m examples.make_test_ca DIR node-a node-b

writes into DIR (created, mode 0700):

    ca.pem                the CA certificate: server.tls.ca_file on every node
    ca.key                the CA's key (only to issue more certificates; keep it away)
    node-a.pem node-a.key node-a's certificate and key: its server.tls.cert_file, key_file
    node-b.pem node-b.key ...

and prints each node's pin, what its peers register it with:

    synthorg-a2a peers add node-a --endpoint https://127.0.0.1:8443 --scheme mtls \\
        --cert DIR/node-a.pem

Each certificate names the node and `localhost`, 127.0.0.1 and ::1 (and `--host` names more),
so the nodes can call each other on this machine; it serves HTTPS and is the node's client
certificate too. Keys are EC P-256, valid for `--days` days. Not for production: a real
deployment's CA is the organisations' own.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from synthorg.tls.pins import pin_of

DEFAULT_DAYS = 30
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())

    @property
    def pin(self) -> str:
        return pin_of(self.certificate.public_bytes(Encoding.DER))


def _name(common_name: str) -> x509.Name:
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "SynthOrg test"),
        x509.NameAttribute(NameOID.COMMON_NAME, common_name),
    ])


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def make_ca(common_name: str = "SynthOrg test CA", days: int = DEFAULT_DAYS) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, encipher_only=False,
                          decipher_only=False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate, key)


def _alt_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(ca: Issued, node: str, hosts: tuple[str, ...] = (), days: int = DEFAULT_DAYS,
          signer: Issued | None = None) -> Issued:
    """A certificate for `node` (server and client use) from `ca`. `signer` (default: `ca`)
    signs it: pass the node's own to make a self-signed one."""
    key = ec.generate_private_key(ec.SECP256R1())
    issuer = signer or ca
    names = dict.fromkeys((node, *LOCAL_HOSTS, *hosts))
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(node))
        .issuer_name(issuer.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([_alt_name(h) for h in names]),
                       critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                   ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
            critical=False,
        )
    )
    return Issued(builder.sign(issuer.key, hashes.SHA256()), key)


def self_signed(node: str, days: int = DEFAULT_DAYS) -> Issued:
    """A certificate for `node` signed by its own key (what a stranger could make)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(node))
        .issuer_name(_name(node))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([_alt_name(h) for h in (node, *LOCAL_HOSTS)]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate, key)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def write_node(directory: Path, name: str, issued: Issued) -> None:
    _write(directory / f"{name}.pem", issued.pem)
    _write(directory / f"{name}.key", issued.key_pem, private=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.make_test_ca",
                                     description="A test CA and certificates for nodes.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("nodes", nargs="+", help="node names (each gets NAME.pem, NAME.key)")
    parser.add_argument("--host", action="append", default=[],
                        help="another DNS name or IP address every certificate names")
    parser.add_argument("--days", type=int, default=DEFAULT_DAYS)
    args = parser.parse_args(argv)
    directory: Path = args.directory
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca = make_ca(days=args.days)
    _write(directory / "ca.pem", ca.pem)
    _write(directory / "ca.key", ca.key_pem, private=True)
    for node in args.nodes:
        issued = issue(ca, node, tuple(args.host), args.days)
        write_node(directory, node, issued)
        print(f"{node}: {directory / (node + '.pem')}  pin {issued.pin}")
    print(f"CA: {directory / 'ca.pem'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
