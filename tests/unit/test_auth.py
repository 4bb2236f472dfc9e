"""PeerGate: every branch of the three header-only gates (DESIGN §4 steps 3-5)."""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass

import pytest

from synthorg.admin.token import AdminToken
from synthorg.gateway import gates as auth
from synthorg.gateway.admission import AdmissionWatch
from synthorg.gateway.gates import Admitted, PeerGate, Refused
from synthorg.http.headers import header_map
from tests.support.codes import PEER_NOT_ALLOWED, UNAUTHENTICATED

SECRET = "s3cret-key-for-peer-a"
ADMIN_TOKEN = AdminToken.from_value(b"the-operator-admin-token-0123", "env")


@dataclass(frozen=True)
class Record:
    scheme: str
    secret: str


@dataclass(frozen=True)
class RatedRecord(Record):
    rate_limit: float | None = None


class Catalog:
    """Test double of the catalog protocol: a dict behind ``get``."""

    def __init__(self, records: dict[str, Record]) -> None:
        self.records = records
        self.lookups: list[str] = []

    def get(self, name: str) -> Record | None:
        self.lookups.append(name)
        return self.records.get(name)


class BrokenCatalog:
    def get(self, name: str) -> Record | None:
        raise RuntimeError("database is locked")


class ExplodingRecord:
    scheme = "api_key"

    @property
    def secret(self) -> str:
        raise ValueError("cannot decrypt")


class ExplodingRecordCatalog:
    def get(self, name: str) -> ExplodingRecord:
        return ExplodingRecord()


ALLOWED = frozenset({"peer-a", "peer-b"})


def gate(scheme: str = "api_key", secret: str = SECRET) -> PeerGate:
    return PeerGate(ALLOWED, Catalog({"peer-a": Record(scheme, secret)}), ADMIN_TOKEN)


def refused(result: auth.GateResult, status: int, code: int, reason: str) -> Refused:
    assert isinstance(result, Refused), result
    assert (result.status, result.error.code, result.reason) == (status, code, reason)
    return result


# Gate 1: peer name


def test_missing_peer_name_is_401() -> None:
    refused(gate().check({"x-api-key": SECRET}), 401, UNAUTHENTICATED, "missing_peer_name")


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "-peer",
        ".peer",
        "peer a",
        "peer/a",
        "a" * 64,
        "pëer",
        "\u212aelvin",  # KELVIN SIGN lower-cases to ASCII "k"; must not be accepted
        "peer\udcff",  # undecodable header byte, surrogate-escaped by the transport
        "peer\x00a",
    ],
)
def test_invalid_peer_name_is_401(raw: str) -> None:
    result = refused(
        gate().check({"x-a2a-peer-name": raw}), 401, UNAUTHENTICATED, "invalid_peer_name"
    )
    assert result.peer is None


def test_peer_name_is_canonicalised() -> None:
    result = gate().check({"x-a2a-peer-name": "  PEER-A\t", "x-api-key": SECRET})
    assert result == Admitted("peer-a")


def test_header_names_are_case_insensitive() -> None:
    raw = [(b"X-A2A-Peer-Name", b"peer-a"), (b"X-Api-Key", SECRET.encode())]
    assert gate().check(header_map(raw)) == Admitted("peer-a")


def test_longest_valid_name() -> None:
    name = "a" * 63
    g = PeerGate(frozenset({name}), Catalog({name: Record("api_key", SECRET)}), ADMIN_TOKEN)
    assert g.check({"x-a2a-peer-name": name, "x-api-key": SECRET}) == Admitted(name)


# Gate 2: allowlist


def test_peer_not_in_allowlist_is_403() -> None:
    result = refused(
        gate().check({"x-a2a-peer-name": "stranger", "x-api-key": SECRET}),
        403,
        PEER_NOT_ALLOWED,
        "peer_not_allowed",
    )
    assert result.peer == "stranger"


def test_allowlist_checked_before_catalog() -> None:
    catalog = Catalog({"stranger": Record("api_key", SECRET)})
    result = PeerGate(ALLOWED, catalog, ADMIN_TOKEN).check({"x-a2a-peer-name": "stranger"})
    refused(result, 403, PEER_NOT_ALLOWED, "peer_not_allowed")
    assert catalog.lookups == []


def test_the_gate_reads_the_record_once_and_hands_it_on() -> None:
    """The steps after the gates (the rate limit) take the peer's record from the verdict,
    so a request costs one catalog lookup."""
    record = RatedRecord("api_key", SECRET, 2.5)
    catalog = Catalog({"peer-a": record})
    admitted = PeerGate(ALLOWED, catalog, ADMIN_TOKEN).check(
        {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET})
    assert isinstance(admitted, Admitted)
    assert admitted.record is record and admitted.rate_limit == 2.5
    assert catalog.lookups == ["peer-a"]
    assert Admitted("peer-a").rate_limit is None  # no catalog: the setting applies
    wrong = PeerGate(ALLOWED, catalog, ADMIN_TOKEN).check(
        {"x-a2a-peer-name": "peer-a", "x-api-key": "wrong"})
    refused(wrong, 401, UNAUTHENTICATED, "credential_mismatch")


def test_empty_allowlist_accepts_nothing() -> None:
    g = PeerGate(frozenset(), Catalog({"peer-a": Record("api_key", SECRET)}), ADMIN_TOKEN)
    refused(
        g.check({"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}),
        403,
        PEER_NOT_ALLOWED,
        "peer_not_allowed",
    )


# Gate 3: credentials


def test_api_key_header_admits() -> None:
    assert gate().check({"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}) == Admitted("peer-a")


def test_api_key_falls_back_to_bearer() -> None:
    headers = {"x-a2a-peer-name": "peer-a", "authorization": f"Bearer {SECRET}"}
    assert gate().check(headers) == Admitted("peer-a")


def test_a_blank_api_key_header_beside_a_right_bearer_is_refused() -> None:
    # X-API-Key, when sent, is the credential; a blank one is a wrong one.
    headers = {"x-a2a-peer-name": "peer-a", "x-api-key": "  ", "authorization": f"Bearer {SECRET}"}
    refused(gate().check(headers), 401, UNAUTHENTICATED, "missing_credential")


def test_x_api_key_when_sent_is_the_credential() -> None:
    headers = {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET, "authorization": "Bearer other"}
    assert gate().check(headers) == Admitted("peer-a")


def test_the_same_secret_in_both_headers_is_admitted() -> None:
    headers = {
        "x-a2a-peer-name": "peer-a",
        "x-api-key": SECRET,
        "authorization": f"Bearer {SECRET}",
    }
    assert gate().check(headers) == Admitted("peer-a")


def test_api_key_header_wins_over_bearer() -> None:
    headers = {
        "x-a2a-peer-name": "peer-a",
        "x-api-key": "wrong",
        "authorization": f"Bearer {SECRET}",
    }
    refused(gate().check(headers), 401, UNAUTHENTICATED, "credential_mismatch")


@pytest.mark.parametrize("word", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_bearer_scheme_word_is_case_insensitive(word: str) -> None:
    headers = {"x-a2a-peer-name": "peer-a", "authorization": f"{word}  {SECRET} "}
    assert gate("bearer").check(headers) == Admitted("peer-a")


def test_bearer_scheme_ignores_x_api_key() -> None:
    headers = {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}
    refused(gate("bearer").check(headers), 401, UNAUTHENTICATED, "missing_credential")


@pytest.mark.parametrize("scheme", ["api_key", "bearer"])
@pytest.mark.parametrize(
    "authorization", [None, "", "Bearer", "Bearer   ", f"Basic {SECRET}", SECRET, f"Token {SECRET}"]
)
def test_missing_credential(scheme: str, authorization: str | None) -> None:
    headers = {"x-a2a-peer-name": "peer-a"}
    if authorization is not None:
        headers["authorization"] = authorization
    refused(gate(scheme).check(headers), 401, UNAUTHENTICATED, "missing_credential")


@pytest.mark.parametrize("presented", ["wrong", SECRET + "x", SECRET[:-1], SECRET.upper()])
def test_wrong_credential(presented: str) -> None:
    headers = {"x-a2a-peer-name": "peer-a", "authorization": f"Bearer {presented}"}
    refused(gate("bearer").check(headers), 401, UNAUTHENTICATED, "credential_mismatch")


def test_no_credential_record() -> None:
    g = PeerGate(ALLOWED, Catalog({}), ADMIN_TOKEN)
    refused(
        g.check({"x-a2a-peer-name": "peer-b", "x-api-key": SECRET}),
        401,
        UNAUTHENTICATED,
        "no_credential_record",
    )


@pytest.mark.parametrize("stored", ["", "   ", "\t\n"])
def test_blank_stored_secret_fails_closed(stored: str) -> None:
    # Presenting the same blank value must not match it.
    headers = {
        "x-a2a-peer-name": "peer-a",
        "x-api-key": stored,
        "authorization": f"Bearer {stored}",
    }
    refused(gate(secret=stored).check(headers), 401, UNAUTHENTICATED, "blank_stored_secret")


@pytest.mark.parametrize("scheme", ["basic", "API_KEY", "", "hmac"])
def test_unknown_scheme_fails_closed(scheme: str) -> None:
    headers = {
        "x-a2a-peer-name": "peer-a",
        "x-api-key": SECRET,
        "authorization": f"Bearer {SECRET}",
    }
    refused(gate(scheme).check(headers), 401, UNAUTHENTICATED, "unknown_scheme")


@pytest.mark.parametrize("catalog", [BrokenCatalog(), ExplodingRecordCatalog()])
def test_catalog_failure_fails_closed(catalog: object) -> None:
    g = PeerGate(ALLOWED, catalog, ADMIN_TOKEN)  # type: ignore[arg-type]
    refused(
        g.check({"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}),
        401,
        UNAUTHENTICATED,
        "catalog_error",
    )


def test_gate3_failures_share_one_message() -> None:
    messages = {
        refused(g.check(h), 401, UNAUTHENTICATED, r).message
        for g, h, r in [
            (gate(), {"x-a2a-peer-name": "peer-a"}, "missing_credential"),
            (gate(), {"x-a2a-peer-name": "peer-a", "x-api-key": "x"}, "credential_mismatch"),
            (
                PeerGate(ALLOWED, Catalog({}), ADMIN_TOKEN),
                {"x-a2a-peer-name": "peer-a"},
                "no_credential_record",
            ),
            (gate(secret=""), {"x-a2a-peer-name": "peer-a"}, "blank_stored_secret"),
            (gate("odd"), {"x-a2a-peer-name": "peer-a"}, "unknown_scheme"),
        ]
    }
    assert len(messages) == 1
    assert SECRET not in next(iter(messages))


def test_compare_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, object]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return bool(real(a, b))

    # auth looks compare_digest up on the hmac module at call time.
    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert gate().check({"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}) == Admitted("peer-a")
    refused(
        gate().check({"x-a2a-peer-name": "peer-a", "x-api-key": "nope"}),
        401,
        UNAUTHENTICATED,
        "credential_mismatch",
    )
    # (The admitted call also compares the admin token's digest: filtered out here.)
    credential_calls = [call for call in calls if call[1] == SECRET.encode()]
    assert credential_calls == [(SECRET.encode(), SECRET.encode()), (b"nope", SECRET.encode())]


# Non-ASCII and garbage headers never crash


@pytest.mark.parametrize(
    "presented", ["pässwört", "\udcff\udcfe", "\ud800", "日本語", "\x00", "x" * 100_000]
)
def test_garbage_credentials_are_refused_not_raised(presented: str) -> None:
    for headers in (
        {"x-a2a-peer-name": "peer-a", "x-api-key": presented},
        {"x-a2a-peer-name": "peer-a", "authorization": f"Bearer {presented}"},
    ):
        refused(gate().check(headers), 401, UNAUTHENTICATED, "credential_mismatch")


def test_utf8_secret_matches_utf8_header() -> None:
    secret = "pässwört-日本"
    # The transport decodes header bytes as UTF-8 (surrogateescape), so this is what arrives.
    presented = secret.encode("utf-8").decode("utf-8", "surrogateescape")
    assert gate(secret=secret).check({"x-a2a-peer-name": "peer-a", "x-api-key": presented}) == (
        Admitted("peer-a")
    )


def test_undecodable_header_bytes_are_refused() -> None:
    # What the transport hands over for a header holding invalid UTF-8.
    escaped = b"k\xffey".decode("utf-8", "surrogateescape")
    refused(
        gate().check({"x-a2a-peer-name": "peer-a", "x-api-key": escaped}),
        401,
        UNAUTHENTICATED,
        "credential_mismatch",
    )


# Development shape: no catalog at all


def test_no_catalog_skips_gate3_only() -> None:
    g = PeerGate(ALLOWED, None, ADMIN_TOKEN)
    assert g.check({"x-a2a-peer-name": "peer-b"}) == Admitted("peer-b")
    refused(g.check({"x-a2a-peer-name": "stranger"}), 403, PEER_NOT_ALLOWED, "peer_not_allowed")
    refused(g.check({}), 401, UNAUTHENTICATED, "missing_peer_name")


def test_empty_catalog_is_not_the_fail_open_shape() -> None:
    g = PeerGate(ALLOWED, Catalog({}), ADMIN_TOKEN)
    refused(g.check({"x-a2a-peer-name": "peer-b"}), 401, UNAUTHENTICATED, "no_credential_record")


def test_results_never_carry_the_secret() -> None:
    for headers in (
        {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET},
        {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET + "!"},
    ):
        assert SECRET not in repr(gate().check(headers))


# -- open streams: the gates run again while they last ----------------------------------------


@pytest.mark.parametrize("change,reason", [
    ("allowlist", "peer_not_allowed"), ("remove", "no_credential_record"),
    ("rekey", "credential_mismatch"),
])
def test_an_open_streams_admission_is_watched_until_the_gates_refuse(
    change: str, reason: str
) -> None:
    catalog = Catalog({"peer-a": Record("api_key", SECRET)})
    g = PeerGate(ALLOWED, catalog, ADMIN_TOKEN)
    headers = {"x-a2a-peer-name": "peer-a", "x-api-key": SECRET}
    refreshed: list[int] = []

    async def request_started() -> None:
        refreshed.append(1)

    async def scenario() -> Refused:
        watch = AdmissionWatch(g, request_started, interval=0.01)
        revoked = watch.watch(headers)
        kept = watch.watch(dict(headers))
        watch.release(kept)  # a stream that ended is no longer watched
        assert kept.cancelled()
        if change == "allowlist":
            g.allowed_peers = frozenset()
        elif change == "remove":
            del catalog.records["peer-a"]
        else:
            catalog.records["peer-a"] = Record("api_key", "a-new-secret-5c2e")
        refusal = await revoked  # completes once a tick sees the change
        watch.release(revoked)
        return refusal

    refusal = asyncio.run(scenario())
    assert refusal.reason == reason and refreshed  # each tick refreshes the caches first
