"""The admin API in process (the node's real ASGI app, SQLite in a temp dir): authentication on
headers only, the transport refusals, strict bodies, 400s naming the key and range, nothing
half-applied, peers CRUD without secrets, and the audit trail."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from synthorg.admin.activity import ActivityView
from synthorg.admin.api import AdminApi
from synthorg.admin.gate import ADMIN_ROUTES, MAX_BODY_BYTES, AdminGate
from synthorg.admin.status import NodeStatus
from synthorg.admin.tasks import AdminTasks
from synthorg.admin.token import TOKEN_ENV, TOKEN_FILENAME
from synthorg.contract.spec import all_definitions, bundled_openapi
from synthorg.generated.models import AdminError
from synthorg.node import Health, Node
from synthorg.observability.log import LOGGER_NAME
from synthorg.push.receiver import PushReceiver, ReceiverContext
from synthorg.settings.definitions.a2a import definitions
from synthorg.store.catalog import MIN_SECRET_LENGTH
from synthorg.web.endpoints import operation_endpoints
from synthorg.web.router import Router

PEER, PEER_KEY = "peer-a", "peer-a-credential-3b9d1f"
SECRET = "peer-secret-LEAKCHECK-7e21c4"
SECRET_2 = "peer-secret-LEAKCHECK-rotated-90ab"
CONFIG = f"""\
a2a:
  enabled: true
  allowed_peers: [{PEER}, peer-b, twin]
  max_message_parts: 7
"""
SETTINGS = "/api/v1/admin/settings"
PEERS = "/api/v1/admin/peers"
MAX_PARTS = f"{SETTINGS}/a2a.max_message_parts"


class Admin:
    """A built node, its app, and its admin token (read from admin.token, as an operator
    would); `request` sends one request through the whole app."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.node = Node.build(data_dir)
        self.app = self.node.app()
        self.token = (data_dir / TOKEN_FILENAME).read_text().strip()
        self.auth = {"Authorization": f"Bearer {self.token}"}

    def request(self, method: str, path: str, *, auth: bool = True, **kwargs: Any
                ) -> httpx.Response:
        headers = {**(self.auth if auth else {}), **kwargs.pop("headers", {})}

        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
                return await client.request(method, path, headers=headers, **kwargs)

        return asyncio.run(send())

    def audit(self) -> list[dict[str, Any]]:
        return self.node.stores.audit.list()


@pytest.fixture
def admin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Admin]:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    data_dir = tmp_path / "node"
    data_dir.mkdir()
    (data_dir / "config.yaml").write_text(CONFIG)
    built = Admin(data_dir)
    built.node.catalog.put(PEER, "http://127.0.0.1:9", "api_key", PEER_KEY)
    yield built
    built.node.close()


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    return caplog


def emitted(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    found = []
    for record in caplog.records:
        if record.name == LOGGER_NAME:
            event = json.loads(record.getMessage())
            if event["event"] == name:
                found.append(event)
    return found


def expect_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["error"] == error and isinstance(body["message"], str), body
    assert set(body) <= {"error", "message", "key", "allowed"}
    return dict(body)


# -- the spec and the code agree ------------------------------------------------------------------


def test_the_route_table_is_the_specs_admin_paths() -> None:
    paths = bundled_openapi()["paths"]
    expected = {
        path: {m.upper() for m in item if m != "parameters"}
        for path, item in paths.items()
        if path.startswith("/api/v1/admin/")
    }
    assert {r.template: set(r.methods) for r in ADMIN_ROUTES} == expected
    bodies = {(r.template, m) for r in ADMIN_ROUTES for m in r.body_methods}
    assert bodies == {(SETTINGS + "/{name}", "PUT"), (PEERS, "POST"), (PEERS + "/{name}", "PUT"),
                      (PEERS + "/{name}/rate-limit", "PUT"), (PEERS + "/{name}/card-key", "PUT"),
                      (PEERS + "/{name}/binding", "PUT")}


def test_the_specs_setting_names_are_the_runtime_settings() -> None:
    enum = all_definitions()["SettingName"][1]["enum"]
    assert enum == [d.name for d in definitions().values()]


def test_admin_operations_use_the_admin_token_scheme_only() -> None:
    document = bundled_openapi()
    schemes = document["components"]["securitySchemes"]
    assert schemes["AdminToken"] == {**schemes["AdminToken"], "type": "http", "scheme": "bearer"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            is_admin = path.startswith("/api/v1/admin/")
            uses_admin = {"AdminToken"} in [set(r) for r in operation.get("security", [])]
            if path == "/metrics":  # the admin token, or none when metrics_public is set
                assert operation["security"] == [{"AdminToken": []}, {}]
                continue
            assert is_admin == uses_admin, (method, path)
            if is_admin:
                assert operation["security"] == [{"AdminToken": []}]
                assert "401" in operation["responses"]


# -- authentication --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer not-the-admin-token-000000"},
        {"Authorization": "Basic YWRtaW46YWRtaW4="},
        {"Authorization": "Bearer"},
        {"X-A2A-Peer-Name": PEER, "X-API-Key": PEER_KEY},  # a peer's credential
        {"Authorization": f"Bearer {PEER_KEY}"},  # a peer's secret as a bearer token
    ],
    ids=["none", "wrong", "basic", "empty-bearer", "peer-api-key", "peer-secret-bearer"],
)
def test_anything_but_the_admin_token_is_401(admin: Admin, headers: dict[str, str]) -> None:
    response = admin.request("GET", SETTINGS, auth=False, headers=headers)
    expect_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == 'Bearer realm="synthorg-admin"'


def test_the_token_in_another_header_is_401(admin: Admin) -> None:
    for header in ("X-API-Key", "X-Admin-Token"):
        response = admin.request("GET", SETTINGS, auth=False, headers={header: admin.token})
        expect_error(response, 401, "unauthorized")


def test_a_repeated_authorization_header_is_401(admin: Admin) -> None:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=admin.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            request = client.build_request("GET", SETTINGS)
            request.headers = httpx.Headers([
                ("authorization", f"Bearer {admin.token}"),
                ("authorization", "Bearer something-else-entirely"),
            ])
            return await client.send(request)

    expect_error(asyncio.run(send()), 401, "unauthorized")


def test_a_stranger_learns_nothing_about_paths(admin: Admin) -> None:
    expect_error(admin.request("GET", "/api/v1/admin/nope", auth=False), 401, "unauthorized")
    expect_error(admin.request("GET", "/api/v1/admin/nope"), 404, "not_found")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([(b"content-type", b"application/json")], 401),
        ([(b"authorization", b"Bearer wrong-token-00000000000"),
          (b"content-type", b"application/json")], 401),
        ([(b"authorization", b"GOOD"), (b"content-length", b"70000"),
          (b"content-type", b"application/json")], 413),
        ([(b"authorization", b"GOOD"), (b"content-type", b"text/plain")], 415),
    ],
    ids=["no-token", "wrong-token", "declared-too-large", "not-json"],
)
def test_refusals_come_before_any_body_byte_is_read(
    admin: Admin, headers: list[tuple[bytes, bytes]], status: int
) -> None:
    """The middleware as a bare ASGI callable: `receive` is never called, the app never runs."""
    received: list[Any] = []
    reached: list[Any] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        received.append(1)
        return {"type": "http.request", "body": b'{"value": 5}', "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope)

    token = f"Bearer {admin.token}".encode()
    scope = {
        "type": "http", "method": "PUT", "path": MAX_PARTS,
        "headers": [(k, token if v == b"GOOD" else v) for k, v in headers],
    }
    middleware = AdminGate(app, token_provider=lambda: admin.node.admin_token)
    asyncio.run(middleware(scope, receive, send))
    assert sent[0]["status"] == status
    assert received == [] and reached == []


def test_failed_auth_is_logged_without_what_was_presented(
    admin: Admin, events: pytest.LogCaptureFixture
) -> None:
    admin.request("GET", SETTINGS, auth=False, headers={"Authorization": f"Bearer {SECRET}"})
    (event,) = emitted(events, "admin.auth_failed")
    assert event["reason"] == "token_mismatch" and event["status"] == 401
    assert SECRET not in events.text


def test_the_admin_token_never_passes_a_peer_gate(
    admin: Admin, events: pytest.LogCaptureFixture
) -> None:
    # A record whose secret is the admin token, written past the API (which refuses it).
    admin.node.catalog.put("twin", "http://127.0.0.1:9", "api_key", admin.token)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}
    for credential in ({"X-API-Key": admin.token}, {"Authorization": f"Bearer {admin.token}"}):
        response = admin.request("POST", "/api/v1/a2a/", auth=False, json=body,
                                 headers={"X-A2A-Peer-Name": "twin", **credential})
        assert response.status_code == 401, response.text
        assert response.json()["error"]["code"] == -32003
    reasons = [e["reason"] for e in emitted(events, "a2a.inbound.auth_failed")]
    assert reasons == ["admin_token_presented", "admin_token_presented"]
    # ... while a peer presenting its own secret is admitted.
    response = admin.request("POST", "/api/v1/a2a/", auth=False, json=body,
                             headers={"X-A2A-Peer-Name": PEER, "X-API-Key": PEER_KEY})
    assert response.status_code == 200 and response.json()["error"]["code"] == -32001
    assert admin.token not in events.text


def test_admin_handlers_fail_closed_without_the_gate(admin: Admin) -> None:
    """Were the admin gate ever missing, the admin operations would still refuse."""
    node = admin.node
    activity = ActivityView(node.admin, node.discovery, node.activity, node.stores.tasks,
                            node.stores.delegations)
    tasks = AdminTasks(node.tasks, node.stores.tasks, node.stores.delegations, lambda: [])
    api = AdminApi(node.admin, node.settings, node.discovery, node.enabled, activity,
                   NodeStatus(node.stores, node.config.allowed_peers, 1), tasks,
                   node.stores.audit)
    operations = operation_endpoints(
        node.cards, api, Health(node.stores), ReceiverContext(PushReceiver(
            node.catalog, node.stores.push_receipts, node.stores.delegations, lambda: 300
        ))
    )
    admin.app = Router({op: ep for op, ep in operations.items() if not isinstance(ep, str)})
    expect_error(admin.request("GET", SETTINGS), 401, "unauthorized")
    expect_error(admin.request("DELETE", MAX_PARTS), 401, "unauthorized")


# -- transport refusals ----------------------------------------------------------------------------


def test_an_unsupported_method_is_405_with_allow(admin: Admin) -> None:
    response = admin.request("PATCH", f"{PEERS}/{PEER}")
    expect_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "DELETE, GET, PUT"
    assert admin.request("POST", SETTINGS).headers["allow"] == "GET"


def test_a_trailing_slash_is_not_an_admin_path(admin: Admin) -> None:
    expect_error(admin.request("GET", SETTINGS + "/"), 404, "not_found")


def test_put_and_post_need_json(admin: Admin) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {} if content_type is None else {"Content-Type": content_type}
        response = admin.request("PUT", MAX_PARTS, content=b'{"value": 5}', headers=headers)
        expect_error(response, 415, "unsupported_media_type")
    response = admin.request("PUT", MAX_PARTS, content=b'{"value": 5}',
                             headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert response.status_code == 200, response.text


def test_a_declared_body_over_64_kib_is_413_before_reading(admin: Admin) -> None:
    big = b'{"value": 5' + b" " * MAX_BODY_BYTES + b"}"
    response = admin.request("PUT", MAX_PARTS, content=big,
                             headers={"Content-Type": "application/json"})
    expect_error(response, 413, "too_large")
    assert admin.node.settings.view("a2a.max_message_parts").source == "config"


def test_a_streamed_body_over_64_kib_is_413(admin: Admin) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"value": 5'
        for _ in range(17):
            yield b" " * 4096

    response = admin.request("PUT", MAX_PARTS, content=chunks(),
                             headers={"Content-Type": "application/json"})
    expect_error(response, 413, "too_large")


def test_a_body_valid_by_its_schema_can_still_be_413(admin: Admin) -> None:
    # the longest endpoint and secret the schema allows (2,048 and 4,096 characters), outside
    # the BMP: 12 bytes a character once JSON-escaped, so the body passes 64 KiB
    body = json.dumps({"name": "peer-huge", "endpoint": "https://" + "\U0001f600" * 2040,
                       "scheme": "api_key", "secret": "\U0001f600" * 4096}).encode()
    assert len(body) > 64 * 1024
    response = admin.request("POST", "/api/v1/admin/peers", content=body,
                             headers={"Content-Type": "application/json"})
    expect_error(response, 413, "too_large")


def test_a_body_of_exactly_64_kib_is_read(admin: Admin) -> None:
    body = b'{"value": 5}'
    body += b" " * (MAX_BODY_BYTES - len(body))
    response = admin.request("PUT", MAX_PARTS, content=body,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text


def test_an_ill_formed_content_length_is_400(admin: Admin) -> None:
    response = admin.request("PUT", MAX_PARTS, content=b'{"value": 5}',
                             headers={"Content-Type": "application/json",
                                      "Content-Length": "+12"})
    expect_error(response, 400, "invalid_body")


# -- settings --------------------------------------------------------------------------------------


def test_list_and_get_show_value_source_type_and_range(admin: Admin) -> None:
    response = admin.request("GET", SETTINGS)
    assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
    views = {v["name"]: v for v in response.json()["settings"]}
    assert list(views) == [d.name for d in definitions().values()]
    assert views["a2a.max_message_parts"] == {
        "name": "a2a.max_message_parts", "value": 7, "source": "config", "default": 100,
        "type": "integer", "minimum": 1, "maximum": 1000,
        "description": definitions()["max_message_parts"].description,
    }
    assert views["a2a.client_timeout_seconds"]["source"] == "default"
    assert admin.request("GET", MAX_PARTS).json() == views["a2a.max_message_parts"]


def test_write_then_reset(admin: Admin, events: pytest.LogCaptureFixture) -> None:
    response = admin.request("PUT", MAX_PARTS, json={"value": 3})
    assert response.status_code == 200
    assert (response.json()["value"], response.json()["source"]) == (3, "runtime")
    assert admin.node.settings.max_message_parts == 3
    response = admin.request("DELETE", MAX_PARTS)
    assert response.status_code == 200
    assert (response.json()["value"], response.json()["source"]) == (7, "config")
    changed, reset = admin.audit()
    assert changed == {**changed, "event": "admin.setting.changed", "via": "admin_api",
                       "key": "a2a.max_message_parts", "old": 7, "old_source": "config",
                       "new": 3, "new_source": "runtime"}
    assert reset == {**reset, "event": "admin.setting.reset", "via": "admin_api",
                     "old": 3, "old_source": "runtime", "new": 7, "new_source": "config"}
    assert changed["ts"].endswith("Z") and changed["client"]
    assert [e["new"] for e in emitted(events, "admin.setting.changed")] == [3]
    assert [e["new"] for e in emitted(events, "admin.setting.reset")] == [7]


def test_a_number_setting_keeps_its_fraction_and_an_integer_stays_whole(admin: Admin) -> None:
    response = admin.request("PUT", f"{SETTINGS}/a2a.client_timeout_seconds",
                             json={"value": 2.5})
    assert response.json()["value"] == 2.5
    response = admin.request("PUT", f"{SETTINGS}/a2a.client_timeout_seconds", json={"value": 4})
    assert response.json()["value"] == 4.0
    response = admin.request("PUT", f"{SETTINGS}/a2a.push_verification_clock_skew_seconds",
                             json={"value": 600})
    assert response.content.count(b'"value":600,') == 1  # JSON integer, not 600.0


@pytest.mark.parametrize(
    ("name", "body", "error", "range_text"),
    [
        ("a2a.max_message_parts", b'{"value": 0}', "invalid_value", "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": 1001}', "invalid_value",
         "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": 5.0}', "invalid_value", "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": "5"}', "invalid_value", "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": true}', "invalid_value",
         "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": null}', "invalid_value",
         "an integer from 1 to 1000"),
        ("a2a.max_message_parts", b'{"value": [5]}', "invalid_value",
         "an integer from 1 to 1000"),
        ("a2a.client_timeout_seconds", b'{"value": 0.01}', "invalid_value",
         "a number from 0.1 to 600"),
        ("a2a.client_timeout_seconds", b'{"value": 1e400}', "invalid_value",
         "a number from 0.1 to 600"),
        ("a2a.push_verification_clock_skew_seconds", b'{"value": -1}', "invalid_value",
         "an integer from 0 to 86400"),
        ("a2a.card_cache_max_entries", b'{"value": 100001}', "invalid_value",
         "an integer from 1 to 100000"),
    ],
)
def test_a_bad_value_is_400_naming_the_key_and_range_and_writes_nothing(
    admin: Admin, name: str, body: bytes, error: str, range_text: str
) -> None:
    before = admin.node.settings.view(name)
    response = admin.request("PUT", f"{SETTINGS}/{name}", content=body,
                             headers={"Content-Type": "application/json"})
    problem = expect_error(response, 400, error)
    assert problem["key"] == name and problem["allowed"] == range_text
    assert name in problem["message"] and range_text in problem["message"]
    assert admin.node.settings.view(name) == before
    assert admin.audit() == []


@pytest.mark.parametrize(
    ("body", "key"),
    [
        (b"{}", "value"),
        (b'{"value": 5, "extra": 1}', "extra"),
        (b"[5]", None),
        (b"5", None),
        (b"", None),
        (b'{"value": NaN}', None),
        (b'{"value": 5', None),
        (b"\xff\xfe", None),
        (b"[" * 5000 + b"]" * 5000, None),
        (b'{"value": ' + b"9" * 5000 + b"}", None),
    ],
)
def test_a_malformed_body_is_400_and_writes_nothing(
    admin: Admin, body: bytes, key: str | None
) -> None:
    response = admin.request("PUT", MAX_PARTS, content=body,
                             headers={"Content-Type": "application/json"})
    problem = expect_error(response, 400, "invalid_body")
    assert problem.get("key") == key
    assert admin.node.settings.view("a2a.max_message_parts").source == "config"


def test_a_body_with_a_5000_digit_number_says_what_is_wrong(admin: Admin) -> None:
    response = admin.request("PUT", MAX_PARTS, content=b'{"value": ' + b"9" * 5000 + b"}",
                             headers={"Content-Type": "application/json"})
    problem = expect_error(response, 400, "invalid_body")
    assert "more than 4300 digits" in problem["message"]
    assert "UTF-8" not in problem["message"]


@pytest.mark.parametrize("name", ["max_message_parts", "a2a.bogus", "A2A.max_message_parts"])
def test_an_unknown_setting_is_404_listing_the_known_ones(admin: Admin, name: str) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("GET", {}), ("PUT", {"json": {"value": 5}}), ("DELETE", {})
    ]
    for method, kwargs in calls:
        problem = expect_error(admin.request(method, f"{SETTINGS}/{name}", **kwargs), 404,
                               "unknown_setting")
        assert "a2a.max_message_parts" in problem["message"]


def test_reset_is_idempotent(admin: Admin) -> None:
    first = admin.request("DELETE", MAX_PARTS)
    second = admin.request("DELETE", MAX_PARTS)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()


def test_card_cache_bound_applies_at_once(admin: Admin) -> None:
    for name in ("c1", "c2", "c3"):
        admin.node.catalog.put(name, "http://127.0.0.1:9", "api_key", f"k-{name}")
    body = {"jsonrpc": "2.0", "id": 1, "method": "skills/query", "params": {"skill": "x"}}
    response = admin.request("POST", "/api/v1/a2a/", auth=False, json=body,
                             headers={"X-A2A-Peer-Name": PEER, "X-API-Key": PEER_KEY})
    assert "result" in response.json()
    status = admin.request("GET", "/api/v1/admin/status").json()
    assert (status["a2aEnabled"], status["cardCacheEntries"], status["cardCacheMaxEntries"]) == (
        True, 4, 512)
    admin.request("PUT", f"{SETTINGS}/a2a.card_cache_max_entries", json={"value": 2})
    assert len(admin.node.discovery.cache) == 2  # resized by the write itself
    status = admin.request("GET", "/api/v1/admin/status").json()
    assert (status["cardCacheEntries"], status["cardCacheMaxEntries"]) == (2, 2)


# -- peers -----------------------------------------------------------------------------------------


MTLS_PIN = "sha256//" + "A" * 43 + "="


def new_peer(name: str = "peer-b", secret: str = SECRET, **extra: str) -> dict[str, str]:
    return {"name": name, "endpoint": "http://127.0.0.1:8001/", "scheme": "api_key",
            "secret": secret, **extra}


def test_a_peers_binding_is_set_cleared_and_audited(admin: Admin) -> None:
    assert admin.request("POST", PEERS, json=new_peer()).status_code == 201
    response = admin.request("PUT", f"{PEERS}/peer-b/binding", json={"binding": "HTTP+JSON"})
    assert response.status_code == 200, response.text
    assert response.json()["binding"] == "HTTP+JSON"
    record = admin.node.catalog.get("peer-b")
    assert record is not None and record.binding == "HTTP+JSON"
    # a replaced record keeps its binding
    admin.request("PUT", f"{PEERS}/peer-b", json={"endpoint": "https://b.example",
                                                  "scheme": "bearer", "secret": SECRET_2})
    assert admin.request("GET", f"{PEERS}/peer-b").json()["binding"] == "HTTP+JSON"
    expect_error(admin.request("PUT", f"{PEERS}/peer-b/binding", json={"binding": "SOAP"}),
                 400, "invalid_body")
    expect_error(admin.request("PUT", f"{PEERS}/nobody/binding", json={"binding": "GRPC"}),
                 404, "unknown_peer")
    cleared = admin.request("PUT", f"{PEERS}/peer-b/binding", json={"binding": None})
    assert cleared.status_code == 200 and cleared.json()["binding"] is None
    trail = [e for e in admin.audit() if e["event"] == "admin.peer.replaced"]
    assert trail[0]["new"]["binding"] == "HTTP+JSON" and "binding" not in trail[-1]["new"]


def test_peer_lifecycle(admin: Admin, events: pytest.LogCaptureFixture) -> None:
    response = admin.request("POST", PEERS, json=new_peer())
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["location"] == f"{PEERS}/peer-b"
    assert created["endpoint"] == "http://127.0.0.1:8001"  # trailing slash dropped
    assert set(created) == {"name", "endpoint", "scheme", "rateLimit", "cardKey", "binding",
                            "card", "createdAt", "updatedAt"}
    assert created["binding"] is None  # the peer's card decides
    assert created["rateLimit"] is None  # follows a2a.peer_rate_limit_per_second
    assert admin.request("GET", f"{PEERS}/peer-b").json() == created
    names = [p["name"] for p in admin.request("GET", PEERS).json()["peers"]]
    assert names == [PEER, "peer-b"]

    response = admin.request("PUT", f"{PEERS}/peer-b",
                             json={"endpoint": "https://b.example", "scheme": "bearer",
                                   "secret": SECRET_2})
    assert response.status_code == 200
    replaced = response.json()
    assert replaced["createdAt"] == created["createdAt"] and replaced["scheme"] == "bearer"
    record = admin.node.catalog.get("peer-b")
    assert record is not None and record.secret == SECRET_2

    assert admin.request("DELETE", f"{PEERS}/peer-b").status_code == 204
    expect_error(admin.request("GET", f"{PEERS}/peer-b"), 404, "unknown_peer")
    expect_error(admin.request("DELETE", f"{PEERS}/peer-b"), 404, "unknown_peer")

    trail = admin.audit()
    assert [(e["event"], e["peer"], e["via"]) for e in trail] == [
        ("admin.peer.created", "peer-b", "admin_api"),
        ("admin.peer.replaced", "peer-b", "admin_api"),
        ("admin.peer.deleted", "peer-b", "admin_api"),
    ]
    assert trail[0]["old"] is None and trail[0]["secret_changed"] is True
    assert trail[1]["old"] == {"endpoint": "http://127.0.0.1:8001", "scheme": "api_key"}
    assert trail[1]["new"] == {"endpoint": "https://b.example", "scheme": "bearer"}
    assert trail[1]["secret_changed"] is True
    assert trail[2]["new"] is None
    # Secrets never leave: not in answers, events or the audit trail.
    audit_text = json.dumps(admin.audit())
    for secret in (SECRET, SECRET_2):
        assert secret not in audit_text and secret not in events.text


def test_replacing_with_the_same_secret_says_it_did_not_change(admin: Admin) -> None:
    admin.request("POST", PEERS, json=new_peer())
    admin.request("PUT", f"{PEERS}/peer-b",
                  json={"endpoint": "http://127.0.0.1:8002", "scheme": "api_key",
                        "secret": SECRET})
    assert admin.audit()[-1]["secret_changed"] is False


def test_creating_an_existing_peer_is_409_and_changes_nothing(admin: Admin) -> None:
    admin.request("POST", PEERS, json=new_peer())
    response = admin.request("POST", PEERS, json=new_peer(secret=SECRET_2))
    expect_error(response, 409, "peer_exists")
    record = admin.node.catalog.get("peer-b")
    assert record is not None and record.secret == SECRET
    assert len(admin.audit()) == 1


def test_replacing_a_missing_peer_is_404(admin: Admin) -> None:
    response = admin.request("PUT", f"{PEERS}/ghost",
                             json={"endpoint": "http://h", "scheme": "api_key", "secret": "s"})
    expect_error(response, 404, "unknown_peer")
    assert admin.node.catalog.get("ghost") is None


def test_only_the_canonical_name_names_a_peer(admin: Admin) -> None:
    expect_error(admin.request("GET", f"{PEERS}/Peer-A"), 404, "unknown_peer")
    expect_error(admin.request("DELETE", f"{PEERS}/Peer-A"), 404, "unknown_peer")
    assert admin.node.catalog.get(PEER) is not None


def test_a_peer_secret_equal_to_the_admin_token_is_refused(admin: Admin) -> None:
    problem = expect_error(admin.request("POST", PEERS, json=new_peer(secret=admin.token)),
                           400, "invalid_value")
    assert problem["key"] == "secret" and admin.token not in json.dumps(problem)
    assert admin.node.catalog.get("peer-b") is None
    response = admin.request("PUT", f"{PEERS}/{PEER}",
                             json={"endpoint": "http://h", "scheme": "api_key",
                                   "secret": admin.token})
    expect_error(response, 400, "invalid_value")
    record = admin.node.catalog.get(PEER)
    assert record is not None and record.secret == PEER_KEY
    assert admin.audit() == []


@pytest.mark.parametrize(
    ("change", "key", "error"),
    [
        # Refused by the schema (the generated model) ...
        ({"name": "Peer-B"}, "name", "invalid_body"),
        ({"name": ""}, "name", "invalid_body"),
        ({"endpoint": "ftp://h"}, "endpoint", "invalid_body"),
        ({"endpoint": "http://user:pw@h"}, "endpoint", "invalid_body"),
        ({"endpoint": "http://h?q=1"}, "endpoint", "invalid_body"),
        ({"scheme": "basic"}, "scheme", "invalid_body"),
        ({"secret": ""}, "secret", "invalid_body"),
        ({"secret": " padded-secret-0123456789"}, "secret", "invalid_body"),
        ({"secret": "line\nbreak-secret-0123456789"}, "secret", "invalid_body"),
        ({"secret": "x" * 15}, "secret", "invalid_body"),
        ({"secret": "x" * 4097}, "secret", "invalid_body"),
        ({"extra": "x"}, "extra", "invalid_body"),
        # ... or past it, by what a schema cannot say.
        ({"endpoint": "http://h:99999"}, "endpoint", "invalid_value"),
        ({"endpoint": "http://[::1"}, "endpoint", "invalid_value"),
        # mtls: the secret is a certificate pin, the endpoint https
        ({"scheme": "mtls"}, "secret", "invalid_value"),
        ({"scheme": "mtls", "secret": MTLS_PIN}, "endpoint", "invalid_value"),
    ],
)
def test_a_bad_peer_is_400_naming_the_field_and_never_echoing_the_secret(
    admin: Admin, change: dict[str, str], key: str, error: str
) -> None:
    body = {**new_peer(), **change}
    problem = expect_error(admin.request("POST", PEERS, json=body), 400, error)
    assert problem["key"] == key
    assert SECRET not in json.dumps(problem) and "padded" not in json.dumps(problem)
    assert admin.node.catalog.get("peer-b") is None


def test_a_short_secret_is_400_naming_the_rule_and_never_echoing_it(admin: Admin) -> None:
    short = "SHORT-LEAK-9c1e"  # 15 characters: one short of MIN_SECRET_LENGTH
    assert len(short) == MIN_SECRET_LENGTH - 1
    for method, path, body in (
        ("POST", PEERS, new_peer(secret=short)),
        ("PUT", f"{PEERS}/{PEER}", {"endpoint": "http://h", "scheme": "api_key", "secret": short}),
    ):
        problem = expect_error(admin.request(method, path, json=body), 400, "invalid_body")
        AdminError.model_validate(problem)  # the spec's error shape
        assert problem["key"] == "secret"
        assert problem["message"] == "secret must be at least 16 characters"
        assert short not in json.dumps(problem)
    assert admin.node.catalog.get("peer-b") is None
    record = admin.node.catalog.get(PEER)
    assert record is not None and record.secret == PEER_KEY
    assert admin.audit() == []
    # Sixteen is enough.
    response = admin.request("POST", PEERS, json=new_peer(secret="x" * MIN_SECRET_LENGTH))
    assert response.status_code == 201, response.text


def test_a_short_secret_stored_before_the_rule_keeps_working(admin: Admin) -> None:
    admin.node.catalog.put("old-peer", "http://127.0.0.1:9", "api_key", "short-old")
    assert admin.request("GET", f"{PEERS}/old-peer").status_code == 200
    record = admin.node.catalog.get("old-peer")
    assert record is not None and record.secret == "short-old"
    # What it says besides its secret changes as before.
    response = admin.request("PUT", f"{PEERS}/old-peer/rate-limit", json={"rateLimit": 5})
    assert response.status_code == 200, response.text


def test_an_mtls_peer_is_created_with_its_pin(admin: Admin) -> None:
    body = new_peer(scheme="mtls", secret=MTLS_PIN, endpoint="https://127.0.0.1:8443")
    response = admin.request("POST", PEERS, json=body)
    assert response.status_code == 201, response.text
    assert response.json()["scheme"] == "mtls" and MTLS_PIN not in response.text
    record = admin.node.catalog.get("peer-b")
    assert record is not None and (record.scheme, record.secret) == ("mtls", MTLS_PIN)


def test_a_missing_field_is_400(admin: Admin) -> None:
    body = new_peer()
    del body["secret"]
    problem = expect_error(admin.request("POST", PEERS, json=body), 400, "invalid_body")
    assert problem["key"] == "secret" and "required" in problem["message"]


# -- disabled gateway ------------------------------------------------------------------------------


def test_the_admin_api_is_served_while_the_gateway_is_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    admin = Admin(tmp_path / "off")  # no config.yaml: a2a.enabled is false
    try:
        assert admin.request("POST", "/api/v1/a2a/", auth=False, json={}).status_code == 404
        assert admin.request("GET", "/api/v1/admin/status").json()["a2aEnabled"] is False
        assert admin.request("PUT", MAX_PARTS, json={"value": 9}).status_code == 200
        assert admin.request("POST", PEERS, json=new_peer()).status_code == 201
    finally:
        admin.node.close()
