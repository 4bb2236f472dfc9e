"""DESIGN §4 steps 0-7 against a live node: routes, method, body ceiling, gates, media type.

Every refusal here is written by the transport layer: a JSON-RPC error envelope with
`id: null`, `Content-Type: application/json` and a real HTTP status.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.conftest import (
    KEY_A,
    KEY_B,
    KEY_BEARER,
    KEY_UNLISTED,
    LIMIT,
    PEER_A,
    PEER_BEARER,
    PEER_GHOST,
    PEER_UNLISTED,
    api_key_headers,
)
from tests.integration.helpers import (
    BARE_PATH,
    INVALID_REQUEST,
    JSON,
    PARSE_ERROR,
    PEER_NOT_ALLOWED,
    RPC_PATH,
    TASK_NOT_FOUND,
    UNAUTHENTICATED,
    HeaderValue,
    RawHeaders,
    RawResponse,
    envelope,
    expect_error,
    expect_result,
    message,
    padded,
    post_body,
    raw_exchange,
    request_head,
    unique,
)
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer

PROBE = envelope("tasks/get", {"id": "no-such-task"}, request_id="probe")


def probe(
    client: httpx.Client,
    headers: dict[str, str] | None = None,
    content_type: str | None = JSON,
    path: str = RPC_PATH,
) -> httpx.Response:
    """A harmless admitted call: tasks/get for a task that does not exist."""
    return post_body(client, json.dumps(PROBE).encode(), content_type, path, headers)


def expect_admitted(response: httpx.Response) -> None:
    """The request passed every gate and reached the handler (which found no task)."""
    expect_error(response, code=TASK_NOT_FOUND, request_id="probe")


def expect_refused(response: httpx.Response | RawResponse, status: int, code: int) -> None:
    expect_error(response, status=status, code=code, request_id=None)


# -- step 0: gateway disabled ---------------------------------------------------------------


@pytest.fixture(scope="module")
def disabled_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("disabled")
    add_peer(data_dir, PEER_A, KEY_A)
    config = f"a2a:\n  enabled: false\n  allowed_peers: [{PEER_A}]\n"
    with LiveNode(data_dir, config) as node:
        yield node


@pytest.mark.parametrize("path", [RPC_PATH, BARE_PATH])
def test_disabled_gateway_answers_404_even_to_a_valid_peer(
    disabled_node: LiveNode, path: str
) -> None:
    with httpx.Client(base_url=disabled_node.url, headers=api_key_headers(PEER_A, KEY_A)) as c:
        assert probe(c, path=path).status_code == 404


@pytest.mark.parametrize("path", [RPC_PATH, BARE_PATH])
def test_disabled_gateway_answers_404_not_405_to_get(disabled_node: LiveNode, path: str) -> None:
    assert httpx.get(disabled_node.url + path).status_code == 404


# -- step 1: method ------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["GET", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("path", [RPC_PATH, BARE_PATH])
def test_non_post_method_answers_405_with_allow_post(
    anon: httpx.Client, verb: str, path: str
) -> None:
    response = anon.request(verb, path)
    expect_refused(response, 405, INVALID_REQUEST)
    assert response.headers["allow"] == "POST"


# -- steps 2 and 7: the body ceiling ---------------------------------------------------------


def test_declared_length_over_limit_is_413_before_credentials_are_checked(
    gateway: LiveNode,
) -> None:
    # Headers only, no body byte sent: the node must answer without waiting for one.
    head = request_head(
        LIMIT + 1, {"X-A2A-Peer-Name": PEER_A, "X-API-Key": "wrong-key", "Content-Type": JSON}
    )
    response = raw_exchange(gateway.port, head)
    expect_refused(response, 413, INVALID_REQUEST)
    assert response.headers.get("connection") == "close"


def test_declared_length_over_limit_is_413_without_any_peer_header(anon: httpx.Client) -> None:
    expect_refused(post_body(anon, b"{" * (LIMIT + 1)), 413, INVALID_REQUEST)


def test_body_of_exactly_the_limit_is_admitted(client_a: httpx.Client) -> None:
    expect_admitted(post_body(client_a, padded(PROBE, LIMIT)))


def test_lying_content_length_only_the_declared_bytes_are_read(gateway: LiveNode) -> None:
    # Declares 20 bytes, sends far more than the limit. HTTP/1.1 framing ends the body at
    # the declared length, so the gateway must see exactly 20 bytes (a truncated JSON
    # document, -32700) and never buffer or parse the excess.
    body = padded(PROBE, 2 * LIMIT)
    head = request_head(
        20, {**api_key_headers(PEER_A, KEY_A), "Content-Type": JSON, "Connection": "close"}
    )
    response = raw_exchange(gateway.port, head + body)
    expect_error(response, code=PARSE_ERROR)


def test_small_content_length_with_chunked_framing_is_refused(gateway: LiveNode) -> None:
    # The other way to lie: declare a small length but frame a large body as chunked.
    body = padded(PROBE, 2 * LIMIT)
    head = request_head(
        20, {**api_key_headers(PEER_A, KEY_A), "Content-Type": JSON, "Transfer-Encoding": "chunked"}
    )
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    response = raw_exchange(gateway.port, head + chunked)
    assert response.status_code in (400, 413)


def _chunks(total: int, size: int = 4096) -> Iterator[bytes]:
    while total > 0:
        yield b" " * min(size, total)
        total -= size


def test_chunked_body_over_limit_is_413_and_node_keeps_serving(client_a: httpx.Client) -> None:
    response = post_body(client_a, _chunks(2 * LIMIT))  # a generator body: no Content-Length
    assert "content-length" not in response.request.headers
    expect_refused(response, 413, INVALID_REQUEST)
    expect_admitted(probe(client_a))


def test_chunked_body_under_limit_is_processed(client_a: httpx.Client) -> None:
    expect_admitted(post_body(client_a, iter([json.dumps(PROBE).encode()])))


# -- steps 3-5: the three gates ------------------------------------------------------------


def test_missing_peer_name_header_is_401_unless_the_key_names_a_peer(anon: httpx.Client
                                                                    ) -> None:
    expect_refused(probe(anon, {"X-API-Key": "names-no-one-0000"}), 401, UNAUTHENTICATED)
    expect_refused(probe(anon, {}), 401, UNAUTHENTICATED)


@pytest.mark.parametrize(
    "name",
    ["", "peer a", "-peer-a", ".peer", "p" * 64, "peer/a", "peer-a, peer-b"],
    ids=["empty", "space", "leading-dash", "leading-dot", "too-long", "slash", "two-names"],
)
def test_invalid_peer_name_header_is_401(anon: httpx.Client, name: str) -> None:
    expect_refused(probe(anon, {"X-A2A-Peer-Name": name, "X-API-Key": KEY_A}), 401, UNAUTHENTICATED)


def raw_probe(gateway: LiveNode, headers: RawHeaders, body: bytes | None = None) -> RawResponse:
    payload = json.dumps(PROBE).encode() if body is None else body
    return raw_exchange(gateway.port, request_head(len(payload), headers) + payload)


@pytest.mark.parametrize(
    "name",
    ["p\u00e9er-a".encode(), b"peer-a\xff", "peer-\u0430".encode()],
    ids=["utf8-accent", "invalid-utf8", "cyrillic-lookalike-of-peer-a"],
)
def test_non_ascii_peer_name_header_is_401(gateway: LiveNode, name: bytes) -> None:
    headers: dict[str, HeaderValue] = {
        "X-A2A-Peer-Name": name,
        "X-API-Key": KEY_A,
        "Content-Type": JSON,
    }
    expect_refused(raw_probe(gateway, headers), 401, UNAUTHENTICATED)


def test_non_ascii_api_key_is_401_not_500(gateway: LiveNode) -> None:
    headers: dict[str, HeaderValue] = {
        "X-A2A-Peer-Name": PEER_A,
        "X-API-Key": b"\xff\xfe" + KEY_A.encode(),
        "Content-Type": JSON,
    }
    expect_refused(raw_probe(gateway, headers), 401, UNAUTHENTICATED)


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        (
            {"X-A2A-Peer-Name": PEER_A, "X-API-Key": "wrong", "Content-Type": JSON},
            401,
            UNAUTHENTICATED,
        ),
        (
            {"X-A2A-Peer-Name": "stranger", "X-API-Key": KEY_A, "Content-Type": JSON},
            403,
            PEER_NOT_ALLOWED,
        ),
        (
            {"X-A2A-Peer-Name": PEER_A, "X-API-Key": KEY_A, "Content-Type": "text/plain"},
            415,
            INVALID_REQUEST,
        ),
    ],
    ids=["bad-key", "unlisted", "wrong-media-type"],
)
def test_header_refusals_are_sent_before_any_body_byte(
    gateway: LiveNode, headers: dict[str, str], status: int, code: int
) -> None:
    # Declares a body but sends none: the answer must not wait for it.
    response = raw_exchange(gateway.port, request_head(100, headers))
    expect_refused(response, status, code)


def test_peer_name_header_is_canonicalised(anon: httpx.Client) -> None:
    expect_admitted(probe(anon, {"X-A2A-Peer-Name": "PEER-A", "X-API-Key": KEY_A}))


@pytest.mark.parametrize("peer", ["stranger", PEER_UNLISTED])
def test_peer_not_in_allowlist_is_403(anon: httpx.Client, peer: str) -> None:
    # peer-unlisted has a valid catalog record: the allowlist is a gate of its own.
    expect_refused(probe(anon, api_key_headers(peer, KEY_UNLISTED)), 403, PEER_NOT_ALLOWED)


def test_allowlisted_peer_without_catalog_record_is_401(anon: httpx.Client) -> None:
    expect_refused(probe(anon, api_key_headers(PEER_GHOST, KEY_A)), 401, UNAUTHENTICATED)


def test_wrong_api_key_is_401(anon: httpx.Client) -> None:
    expect_refused(probe(anon, api_key_headers(PEER_A, "not-the-key")), 401, UNAUTHENTICATED)


def test_another_peers_key_is_401(anon: httpx.Client) -> None:
    expect_refused(probe(anon, api_key_headers(PEER_A, KEY_B)), 401, UNAUTHENTICATED)


def test_credential_refusals_do_not_reveal_which_records_exist(anon: httpx.Client) -> None:
    no_record = probe(anon, api_key_headers(PEER_GHOST, KEY_A))
    wrong_key = probe(anon, api_key_headers(PEER_A, "wrong"))
    no_key = probe(anon, {"X-A2A-Peer-Name": PEER_A})
    wrong_scheme = probe(anon, api_key_headers(PEER_BEARER, KEY_BEARER))
    for response in (wrong_key, no_key, wrong_scheme):
        assert (response.status_code, response.content) == (401, no_record.content)


@pytest.mark.parametrize(
    "credential",
    [
        {},
        {"X-API-Key": ""},
        {"Authorization": "Bearer"},
        {"Authorization": ""},
        {"X-API-Key": "", "Authorization": "Bearer"},
    ],
    ids=["none", "empty-api-key", "bearer-no-token", "empty-authorization", "both-empty"],
)
def test_blank_or_missing_credential_is_401(anon: httpx.Client, credential: dict[str, str]) -> None:
    expect_refused(probe(anon, {"X-A2A-Peer-Name": PEER_A, **credential}), 401, UNAUTHENTICATED)


def test_api_key_record_accepts_x_api_key(anon: httpx.Client) -> None:
    expect_admitted(probe(anon, api_key_headers(PEER_A, KEY_A)))


def test_api_key_record_accepts_authorization_bearer(anon: httpx.Client) -> None:
    expect_admitted(probe(anon, {"X-A2A-Peer-Name": PEER_A, "Authorization": f"Bearer {KEY_A}"}))


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_record_accepts_authorization_bearer(anon: httpx.Client, scheme: str) -> None:
    headers = {"X-A2A-Peer-Name": PEER_BEARER, "Authorization": f"{scheme} {KEY_BEARER}"}
    expect_admitted(probe(anon, headers))


def test_bearer_record_refuses_x_api_key(anon: httpx.Client) -> None:
    expect_refused(probe(anon, api_key_headers(PEER_BEARER, KEY_BEARER)), 401, UNAUTHENTICATED)


def test_bearer_record_refuses_other_authorization_schemes(anon: httpx.Client) -> None:
    headers = {"X-A2A-Peer-Name": PEER_BEARER, "Authorization": f"Basic {KEY_BEARER}"}
    expect_refused(probe(anon, headers), 401, UNAUTHENTICATED)


def test_duplicate_api_key_headers_are_refused(gateway: LiveNode) -> None:
    headers = [
        ("X-A2A-Peer-Name", PEER_A),
        ("X-API-Key", KEY_A),
        ("X-API-Key", "other"),
        ("Content-Type", JSON),
    ]
    expect_refused(raw_probe(gateway, headers), 401, UNAUTHENTICATED)


# -- step 6 and gate order -----------------------------------------------------------------


def test_unlisted_peer_with_wrong_content_type_gets_403_not_415(anon: httpx.Client) -> None:
    response = probe(anon, api_key_headers("stranger", KEY_A), content_type="text/plain")
    expect_refused(response, 403, PEER_NOT_ALLOWED)


def test_bad_credentials_with_wrong_content_type_get_401_not_415(anon: httpx.Client) -> None:
    response = probe(anon, api_key_headers(PEER_A, "wrong"), content_type="text/plain")
    expect_refused(response, 401, UNAUTHENTICATED)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", None, "application/jsonx", "application/json-rpc", "multipart/form-data"],
)
def test_good_credentials_with_wrong_content_type_get_415(
    client_a: httpx.Client, content_type: str | None
) -> None:
    expect_refused(probe(client_a, content_type=content_type), 415, INVALID_REQUEST)


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;"]
)
def test_json_content_type_with_parameters_or_case_is_accepted(
    client_a: httpx.Client, content_type: str
) -> None:
    expect_admitted(probe(client_a, content_type=content_type))


# -- the bare path -------------------------------------------------------------------------


def test_bare_path_serves_message_send_without_redirect(client_a: httpx.Client) -> None:
    msg = message("via the bare path", message_id=unique())
    response = client_a.post(BARE_PATH, json=envelope("message/send", {"message": msg}))
    assert response.status_code == 200
    assert "location" not in response.headers
    assert expect_result(response)["status"]["state"] == "completed"


@pytest.mark.parametrize(
    "headers",
    [api_key_headers(PEER_A, KEY_A), api_key_headers(PEER_A, "wrong"), {}],
    ids=["admitted", "wrong-key", "anonymous"],
)
def test_bare_path_answers_exactly_like_the_slash_path(
    anon: httpx.Client, headers: dict[str, str]
) -> None:
    slash, bare = probe(anon, headers), probe(anon, headers, path=BARE_PATH)
    assert (bare.status_code, bare.content) == (slash.status_code, slash.content)
    assert bare.headers["content-type"] == slash.headers["content-type"] == JSON
