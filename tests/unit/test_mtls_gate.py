"""Certificate pins and the peer gate's mtls scheme: a verified client certificate whose key
has the record's pin is that peer; nothing else admits it."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from examples.make_test_ca import Issued, issue, make_ca, self_signed
from synthorg.admin.token import AdminToken
from synthorg.gateway.credential_index import CredentialIndex
from synthorg.gateway.gates import BAD_CREDENTIAL_MESSAGE, Admitted, PeerGate, Refused
from synthorg.store.catalog import validate_record
from synthorg.tls import pins
from tests.support.codes import UNAUTHENTICATED

CA = make_ca()
NODE_B = issue(CA, "node-b")
NODE_C = issue(CA, "node-c")
OTHER_KEY = issue(CA, "node-b")  # the CA's, named node-b, but another key
STRANGER = self_signed("node-b")
SECRET = "the-link-secret-of-peer-s"
ADMIN_TOKEN = AdminToken.from_value(b"the-operator-admin-token-0123", "env")


def der(issued: Issued) -> bytes:
    return issued.certificate.public_bytes(Encoding.DER)


@dataclass(frozen=True)
class Record:
    name: str
    scheme: str
    secret: str


class Catalog:
    def __init__(self, *records: Record) -> None:
        self.records = {r.name: r for r in records}

    def get(self, name: str) -> Record | None:
        return self.records.get(name)

    def list(self) -> list[Record]:
        return list(self.records.values())

    def revision(self) -> int:
        return 1


CATALOG = Catalog(
    Record("node-b", "mtls", NODE_B.pin),
    Record("node-c", "mtls", NODE_C.pin),
    Record("peer-s", "api_key", SECRET),
)


def gate() -> PeerGate:
    allowed = frozenset({"node-b", "node-c", "peer-s"})
    return PeerGate(allowed, CATALOG, ADMIN_TOKEN, CredentialIndex(CATALOG))


def refused(result: object, reason: str) -> None:
    assert isinstance(result, Refused), result
    assert (result.status, result.error.code, result.reason) == (401, UNAUTHENTICATED, reason)


# -- pins -------------------------------------------------------------------------------------


def test_the_pin_is_the_sha256_of_the_subject_public_key_info() -> None:
    spki = NODE_B.key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    expected = "sha256//" + base64.b64encode(hashlib.sha256(spki).digest()).decode()
    assert pins.pin_of(der(NODE_B)) == expected == NODE_B.pin
    assert pins.pin_of_pem(NODE_B.pem) == expected


def test_a_certificate_matches_its_pin_only() -> None:
    assert pins.matches(der(NODE_B), NODE_B.pin)
    assert not pins.matches(der(OTHER_KEY), NODE_B.pin)  # same CA, same name, other key
    assert not pins.matches(der(STRANGER), NODE_B.pin)
    assert not pins.matches(None, NODE_B.pin)
    assert not pins.matches(b"not a certificate", NODE_B.pin)


@pytest.mark.parametrize("pin", [
    "", "sha256//", "sha256/" + "A" * 44, "sha1//" + "A" * 28, "sha256//" + "A" * 43,
    "sha256//" + "!" * 44, " " + "sha256//" + "A" * 43 + "=",
])
def test_malformed_pins_are_refused(pin: str) -> None:
    assert pins.pin_digest(pin) is None
    with pytest.raises(ValueError, match="sha256//"):
        pins.validate_pin(pin)
    assert not pins.matches(der(NODE_B), pin)


def test_an_mtls_record_must_hold_a_pin() -> None:
    assert validate_record("node-b", "https://127.0.0.1:1", "mtls", NODE_B.pin)[2] == "mtls"
    with pytest.raises(ValueError, match="sha256//"):
        validate_record("node-b", "https://127.0.0.1:1", "mtls", "a-plain-secret")
    with pytest.raises(ValueError, match="https URL for scheme mtls"):
        validate_record("node-b", "http://127.0.0.1:1", "mtls", NODE_B.pin)


# -- the gate ---------------------------------------------------------------------------------


def test_the_pinned_certificate_alone_is_the_peer() -> None:
    assert gate().check({}, der(NODE_B)) == Admitted("node-b")
    assert gate().check({}, der(NODE_C)) == Admitted("node-c")


def test_the_pinned_certificate_with_its_name_is_the_peer() -> None:
    assert gate().check({"x-a2a-peer-name": "node-b"}, der(NODE_B)) == Admitted("node-b")


def test_no_certificate_is_refused_as_a_wrong_secret_is() -> None:
    result = gate().check({"x-a2a-peer-name": "node-b"}, None)
    refused(result, "missing_certificate")
    assert isinstance(result, Refused) and result.message == BAD_CREDENTIAL_MESSAGE
    wrong_secret = gate().check({"x-a2a-peer-name": "peer-s", "x-api-key": "nope"})
    assert isinstance(wrong_secret, Refused)
    assert (wrong_secret.status, wrong_secret.error, wrong_secret.message) == (
        result.status, result.error, result.message)
    refused(gate().check({}, None), "missing_peer_name")


def test_a_certificate_of_the_ca_with_another_key_is_refused() -> None:
    refused(gate().check({"x-a2a-peer-name": "node-b"}, der(OTHER_KEY)), "certificate_mismatch")
    refused(gate().check({}, der(OTHER_KEY)), "missing_peer_name")  # it names no one


def test_a_self_signed_certificate_is_refused() -> None:
    # (TLS refuses it in the handshake already; the gate would too)
    refused(gate().check({"x-a2a-peer-name": "node-b"}, der(STRANGER)), "certificate_mismatch")


def test_a_secret_never_admits_an_mtls_peer() -> None:
    for headers in (
        {"x-a2a-peer-name": "node-b", "x-api-key": NODE_B.pin},
        {"x-a2a-peer-name": "node-b", "authorization": f"Bearer {NODE_B.pin}"},
        {"x-a2a-peer-name": "node-b", "x-api-key": SECRET},
    ):
        refused(gate().check(headers), "missing_certificate")
    # the pin sent as a credential names no one
    refused(gate().check({"x-api-key": NODE_B.pin}), "missing_peer_name")


def test_another_peers_certificate_is_refused_whatever_else_is_sent() -> None:
    # named node-b, showing node-c's certificate
    refused(gate().check({"x-a2a-peer-name": "node-b"}, der(NODE_C)), "certificate_mismatch")
    # a good secret of peer-s, beside node-c's certificate: two identities, none admitted
    refused(gate().check({"x-a2a-peer-name": "peer-s", "x-api-key": SECRET}, der(NODE_C)),
            "certificate_of_another_peer")
    refused(gate().check({"x-api-key": SECRET}, der(NODE_C)), "certificate_of_another_peer")


def test_a_secret_peer_may_show_an_unpinned_certificate() -> None:
    # the certificate is asked for, not required: one no record pins changes nothing
    headers = {"x-api-key": SECRET}
    assert gate().check(headers, der(OTHER_KEY)) == Admitted("peer-s")
    assert gate().check(headers, None) == Admitted("peer-s")


def test_the_admin_token_is_refused_beside_a_pinned_certificate() -> None:
    token = "the-operator-admin-token-0123"
    refused(gate().check({"x-api-key": token}, der(NODE_B)), "admin_token_presented")
