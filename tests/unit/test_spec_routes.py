"""SpecRoutes: the contract and the Swagger UI docs, served in process (no sockets)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
import yaml
from openapi_spec_validator import validate

from synthorg.contract.spec import SCHEMA_FILES, bundled_openapi, spec_dir
from synthorg.web.spec_routes import (
    DOCS_CSP,
    SpecRoutes,
    build_resources,
    schema_resources,
    swagger_ui_dir,
    swagger_ui_version,
)

SCHEMAS = spec_dir() / "schemas"


class Downstream:
    """The app behind the middleware: records what reaches it and answers 299."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"downstream"})


@pytest.fixture(scope="module")
def routes() -> SpecRoutes:
    return SpecRoutes(Downstream(), document=bundled_openapi())


def call(
    app: Any, path: str, method: str = "GET", headers: Mapping[str, str] | None = None
) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
            return await client.request(method, path, headers=headers)

    return asyncio.run(go())


# -- the OpenAPI document --------------------------------------------------------------------


def test_openapi_json_is_the_bundled_document(routes: SpecRoutes) -> None:
    response = call(routes, "/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == bundled_openapi()
    validate(response.json())  # valid OpenAPI 3.1
    assert response.json()["servers"] == [{"url": "/", "description": "This node."}]


def test_openapi_yaml_is_the_same_document(routes: SpecRoutes) -> None:
    response = call(routes, "/openapi.yaml")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/yaml; charset=utf-8"
    assert yaml.safe_load(response.content) == bundled_openapi()


@pytest.mark.parametrize("path", ["/openapi.json", "/openapi.yaml", "/spec/schemas/a2a.json"])
def test_contract_documents_are_cacheable_and_public(routes: SpecRoutes, path: str) -> None:
    response = call(routes, path)
    etag = response.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    assert response.headers["cache-control"] == "public, max-age=300"
    assert response.headers["access-control-allow-origin"] == "*"
    assert call(routes, path).headers["etag"] == etag  # stable
    for if_none_match in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = call(routes, path, headers={"If-None-Match": if_none_match})
        assert again.status_code == 304, if_none_match
        assert again.content == b""
        assert again.headers["etag"] == etag
        assert again.headers["cache-control"] == "public, max-age=300"
    assert call(routes, path, headers={"If-None-Match": '"other"'}).status_code == 200


def test_head_answers_headers_only(routes: SpecRoutes) -> None:
    full = call(routes, "/openapi.json")
    head = call(routes, "/openapi.json", method="HEAD")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(full.content))
    assert head.headers["etag"] == full.headers["etag"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_are_refused(method: str) -> None:
    downstream = Downstream()
    app = SpecRoutes(downstream, document=bundled_openapi())
    for path in ("/openapi.json", "/spec/schemas/a2a.json", "/docs"):
        response = call(app, path, method=method)
        assert response.status_code == 405
        assert response.headers["allow"] == "GET, HEAD"
        assert response.json()["error"] == "method_not_allowed"
    assert downstream.paths == []


def test_every_other_request_reaches_the_app() -> None:
    downstream = Downstream()
    app = SpecRoutes(downstream, document=bundled_openapi())
    paths = [
        "/api/v1/a2a/",
        "/spec/schemas/nope.json",
        "/spec/schemas/",
        "/docs/nope.js",
        "/openapi.json/",
        "/.well-known/agent-card.json",
    ]
    for path in paths:
        assert call(app, path).status_code == 299
    assert downstream.paths == paths


def test_lifespan_passes_through() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        raise AssertionError("nothing is sent for a lifespan scope")

    asyncio.run(SpecRoutes(app, document=bundled_openapi())({"type": "lifespan"}, receive, send))
    assert seen == ["lifespan"]


# -- the JSON Schema files -------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_file_is_served_as_written_at_its_id_path(
    routes: SpecRoutes, name: str
) -> None:
    raw = (SCHEMAS / name).read_bytes()
    path = urlsplit(json.loads(raw)["$id"]).path
    assert path == f"/spec/schemas/{name}"
    response = call(routes, path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/schema+json"
    assert response.content == raw


def test_a_schema_whose_id_does_not_match_its_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"$id": "https://x.example/spec/schemas/b.json"}))
    with pytest.raises(ValueError, match=r"does not end in /spec/schemas/a\.json"):
        schema_resources(tmp_path, ["a.json"])
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(ValueError, match="no \\$id"):
        schema_resources(tmp_path, ["c.json"])


# -- the docs --------------------------------------------------------------------------------


def assets_of(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"#]+)"', page)


@pytest.mark.parametrize("page_path", ["/docs", "/docs/"])
def test_the_docs_page_and_every_asset_it_loads_are_served(
    routes: SpecRoutes, page_path: str
) -> None:
    page = call(routes, page_path)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == DOCS_CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    base = f"http://node{page_path}"
    # The document Swagger UI loads (a data attribute read by init.js) is /openapi.json.
    spec_url = re.search(r'data-spec-url="([^"]+)"', page.text)
    assert spec_url is not None
    assert urlsplit(urljoin(base, spec_url.group(1))).path == "/openapi.json"
    targets = {urlsplit(urljoin(base, ref)).path for ref in assets_of(page.text)}
    assert {
        "/docs/swagger-ui.css",
        "/docs/swagger-ui-bundle.js",
        "/docs/init.js",
        "/docs/favicon-32x32.png",
        "/openapi.json",
        "/openapi.yaml",
    } <= targets
    for target in targets:
        response = call(routes, target)
        assert response.status_code == 200, target
        assert response.content, target
    assert "http://" not in page.text and "https://" not in page.text  # nothing off-node


def test_the_assets_are_swagger_ui_5(routes: SpecRoutes) -> None:
    static = swagger_ui_dir()
    assert static is not None, "swagger-ui-py is a runtime dependency"
    assert swagger_ui_version(static).split(".")[0] == "5"  # 4 cannot render OpenAPI 3.1
    bundle = call(routes, "/docs/swagger-ui-bundle.js")
    assert bundle.headers["content-type"] == "text/javascript; charset=utf-8"
    assert bundle.headers["cache-control"] == "public, max-age=86400"
    assert bundle.content == (static / "swagger-ui-bundle.js").read_bytes()
    assert call(routes, "/docs").text.count(f"Swagger UI {swagger_ui_version(static)}") == 1
    init = call(routes, "/docs/init.js").text
    assert "validatorUrl: null" in init  # no call to the public validator


def test_without_swagger_ui_the_docs_answer_503_and_the_contract_is_still_served(
    tmp_path: Path,
) -> None:
    resources = build_resources(bundled_openapi(), find_swagger_ui=False)
    app = SpecRoutes(Downstream(), document=bundled_openapi(), resources=resources)
    docs = call(app, "/docs")
    assert docs.status_code == 503
    assert "swagger-ui-py" in docs.text
    assert call(app, "/openapi.json").status_code == 200
    assert call(app, "/docs/swagger-ui-bundle.js").status_code == 299


# -- wiring into the app ---------------------------------------------------------------------


def test_the_node_app_serves_the_document_it_was_built_from(tmp_path: Path) -> None:
    from synthorg.node import Node

    before = json.dumps(bundled_openapi(), sort_keys=True)
    node = Node.build(tmp_path)  # no config: the gateway is disabled
    try:
        app = node.app()
        assert json.dumps(bundled_openapi(), sort_keys=True) == before  # not mutated
        assert call(app, "/openapi.json").json() == bundled_openapi()
        assert call(app, "/spec/schemas/methods.json").status_code == 200
        assert call(app, "/docs").status_code == 200
        assert call(app, "/api/v1/a2a/", method="POST").status_code == 404  # gateway off
    finally:
        node.close()
