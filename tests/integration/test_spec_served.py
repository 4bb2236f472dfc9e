"""A running node serves its contract: the OpenAPI document, every JSON Schema file at its
`$id` path (so a reader resolves every `$ref` over HTTP), and the Swagger UI docs. Public
routes: no peer headers, and served whether or not the gateway is enabled."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from synthorg.contract.spec import SCHEMA_FILES, bundled_openapi, spec_dir
from tests.integration.live import LiveNode
from tests.support.catalog import add_peer
from tests.support.node import cli

SCHEMA_PATHS = [f"/spec/schemas/{name}" for name in SCHEMA_FILES]


@pytest.fixture(scope="module")
def disabled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    """A node started without a config file: the gateway is off."""
    with LiveNode(tmp_path_factory.mktemp("spec-disabled")) as node:
        yield node


@pytest.fixture(scope="module", params=["enabled", "disabled"])
def node(request: pytest.FixtureRequest, gateway: LiveNode) -> LiveNode:
    if request.param == "enabled":
        return gateway
    found: LiveNode = request.getfixturevalue("disabled")
    return found


@pytest.fixture
def http(node: LiveNode) -> Iterator[httpx.Client]:
    """No peer headers at all."""
    with httpx.Client(base_url=node.url, timeout=30.0, follow_redirects=False) as client:
        yield client


def test_openapi_documents_are_the_bundled_contract(http: httpx.Client) -> None:
    as_json = http.get("/openapi.json")
    assert as_json.status_code == 200
    assert as_json.headers["content-type"] == "application/json"
    document = as_json.json()
    assert document == bundled_openapi()
    validate(document)  # valid OpenAPI 3.1
    assert document["openapi"].startswith("3.1.")
    assert document["servers"] == [{"url": "/", "description": "This node."}]
    as_yaml = http.get("/openapi.yaml")
    assert as_yaml.status_code == 200
    assert yaml.safe_load(as_yaml.content) == document


def test_the_bundled_document_is_self_contained(http: httpx.Client) -> None:
    """Every `$ref` in /openapi.json is local and resolves within the document."""
    document = http.get("/openapi.json").json()
    refs = list(iter_refs(document))
    assert refs
    for ref in refs:
        assert ref.startswith("#/"), ref
        assert pointer(document, ref[1:]) is not None, ref


@pytest.mark.parametrize("path", ["/openapi.json", *SCHEMA_PATHS, "/docs"])
def test_etag_and_cache_control(http: httpx.Client, path: str) -> None:
    first = http.get(path)
    assert first.status_code == 200
    assert first.headers["cache-control"] == "public, max-age=300"
    etag = first.headers["etag"]
    again = http.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["etag"] == etag
    assert again.content == b""


@pytest.mark.parametrize("path", SCHEMA_PATHS)
def test_schema_files_are_served_as_written(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/schema+json"
    written = (spec_dir() / "schemas" / path.rsplit("/", 1)[-1]).read_bytes()
    assert response.content == written
    assert urlsplit(response.json()["$id"]).path == path


def test_every_ref_between_schema_files_resolves_over_http(node: LiveNode) -> None:
    """A reader that only has the node's URL: each file is fetched by the path of the URI its
    `$ref`s resolve to (the `$id` host is a name, the node serves the path)."""
    fetched: list[str] = []

    with httpx.Client(base_url=node.url, timeout=30.0) as client:

        def retrieve(uri: str) -> Resource[Any]:
            path = urlsplit(uri).path
            fetched.append(path)
            response = client.get(path)
            response.raise_for_status()
            return Resource.from_contents(response.json(), default_specification=DRAFT202012)

        registry: Registry[Any] = Registry(retrieve=retrieve)
        resolved = 0
        for path in SCHEMA_PATHS:
            document = client.get(path).json()
            resolver = registry.resolver(base_uri=document["$id"])
            for ref in iter_refs(document):
                resolver.lookup(ref)  # raises Unresolvable when a ref does not resolve
                resolved += 1
        assert resolved > 50
        # Each file was fetched from the node by the path of its $id (local refs resolve
        # against the file itself; cross-file refs such as methods.json -> a2a.json too).
        assert set(fetched) == set(SCHEMA_PATHS)

        # A validator given only the envelope's URI follows the refs across files over HTTP.
        envelope = client.get("/spec/schemas/jsonrpc.json").json()
        schema = {"$ref": envelope["$id"] + "#/$defs/JsonRpcRequest"}
        validator = Draft202012Validator(schema, registry=registry)
        good = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "m-1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        }
        assert list(validator.iter_errors(good)) == []
        bad = json.loads(json.dumps(good))
        bad["params"]["message"]["parts"][0]["kind"] = "video"
        assert list(validator.iter_errors(bad)) != []


def test_the_docs_page_and_its_assets_are_served(http: httpx.Client, node: LiveNode) -> None:
    page = http.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "content-security-policy" in page.headers
    assert re.search(r'<meta name="generator" content="Swagger UI 5\.', page.text)
    refs = re.findall(r'(?:src|href|data-spec-url)="([^"#]+)"', page.text)
    targets = {urlsplit(urljoin(f"{node.url}/docs", ref)).path for ref in refs}
    assert {"/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/openapi.json"} <= targets
    for target in sorted(targets):
        response = http.get(target)
        assert response.status_code == 200, target
        assert response.content, target
    assert http.get("/docs/").status_code == 200


def test_the_gateway_routes_depend_on_the_node(node: LiveNode, http: httpx.Client) -> None:
    """Only the contract is public whatever the config: the A2A routes still follow a2a.enabled."""
    card = http.get("/.well-known/agent-card.json")
    if node.data_dir.name.startswith("spec-disabled"):
        assert card.status_code == 404
        assert http.post("/api/v1/a2a/", json={}).status_code == 404
    else:
        assert card.status_code == 200
        assert http.post("/api/v1/a2a/", json={}).status_code == 401  # no peer headers


# -- helpers ---------------------------------------------------------------------------------


def iter_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from iter_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from iter_refs(item)


def pointer(document: Any, path: str) -> Any:
    node = document
    for token in path.split("/")[1:]:
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


# -- synthorg-a2a spec, against a live node ---------------------------------------------------


def test_spec_prints_what_the_node_serves(gateway: LiveNode, tmp_path: Path) -> None:
    for fmt, path in (("json", "/openapi.json"), ("yaml", "/openapi.yaml")):
        printed = cli(tmp_path, "spec", "--format", fmt)
        assert printed.stdout.encode() == httpx.get(gateway.url + path).content


def test_spec_check_a_live_peer(gateway: LiveNode, tmp_path: Path) -> None:
    result = cli(tmp_path, "spec", "check", gateway.url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(f"({gateway.url}/openapi.json)")
    assert ["message/send", "yes", "ok", "ok"] in [line.split() for line in lines]
    assert lines[-1] == "verdict: compatible"

    # By catalog name: the peer's recorded endpoint is used.
    add_peer(tmp_path, "gateway-node", "some-key", endpoint=gateway.url)
    by_name = cli(tmp_path, "spec", "check", "gateway-node", "--json")
    assert by_name.returncode == 0, by_name.stderr
    assert json.loads(by_name.stdout)["source"] == f"{gateway.url}/openapi.json"


def test_spec_check_an_unreachable_or_wrong_peer(gateway: LiveNode, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = cli(tmp_path, "spec", "check", f"http://127.0.0.1:{port}", check=False)
    assert down.returncode == 3
    assert "cannot fetch (ConnectError)" in down.stderr
    missing = cli(tmp_path, "spec", "check", f"{gateway.url}/nope.json", check=False)
    assert missing.returncode == 3
    assert "HTTP 404" in missing.stderr
