"""The node's published contract and its interactive docs, served by a pure-ASGI middleware.

Routes (GET and HEAD; anything else answers 405 with ``Allow: GET, HEAD``):

| path | what |
|---|---|
| ``/openapi.json``, ``/openapi.yaml`` | the bundled OpenAPI 3.1 document the node was built from |
| ``/spec/schemas/<file>.json`` | each JSON Schema file as written, at the path of its ``$id`` |
| ``/docs`` (and ``/docs/``) | Swagger UI 5 rendering ``/openapi.json`` |
| ``/docs/<asset>`` | Swagger UI's own files, from the pinned ``swagger-ui-py`` package |
| ``/`` | a redirect (302) to ``/docs``, for a browser pointed at the node |

Everything is public contract: no peer headers are read, and the routes answer whether or not
the A2A gateway is enabled. Every document is rendered once, when the middleware is built, and
served from memory with a strong ``ETag`` (304 on ``If-None-Match``) and ``Cache-Control``.

``servers`` is served as written (``[{url: /}]``): a relative URL resolves against the URL the
document was fetched from, so it is right for every caller without reading the ``Host`` header,
and the document stays byte-identical to the one the node was built from (see docs/spec.md).
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from starlette.types import ASGIApp, Receive, Scope, Send

from synthorg.contract.spec import SCHEMA_FILES, spec_dir
from synthorg.generated.constants import (
    ADMIN_ERROR_METHOD_NOT_ALLOWED,
    IF_NONE_MATCH_HEADER,
    MEDIA_TYPE_APPLICATION_JSON,
)
from synthorg.http.caching import none_match
from synthorg.http.responses import admin_error

OPENAPI_JSON_PATH = "/openapi.json"
OPENAPI_YAML_PATH = "/openapi.yaml"
SCHEMAS_PREFIX = "/spec/schemas/"
DOCS_PATH = "/docs"
ROOT_PATH = "/"
CONTRACT_CACHE_CONTROL = "public, max-age=300"
ASSET_CACHE_CONTROL = "public, max-age=86400"
ALLOW = b"GET, HEAD"

# The Swagger UI files the docs page needs, by the name they are served under in /docs/.
SWAGGER_UI_PACKAGE = "swagger_ui"  # the import name of the swagger-ui-py distribution
SWAGGER_UI_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
INIT_SCRIPT = "init.js"
_BUNDLE_VERSION = re.compile(rb'PACKAGE_VERSION:"([0-9]+\.[0-9]+\.[0-9]+)"')

# The page runs no inline script, loads nothing from another origin, and may only call this
# node ("Try it out" sends requests to the document's relative server, i.e. this origin).
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)

_INIT_JS = """\
// Starts Swagger UI on this node's own OpenAPI document (no network access beyond this origin).
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: new URL(root.getAttribute("data-spec-url"), document.baseURI).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true
  });
});
"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Swagger UI {ui_version}">
<title>{title}</title>
<link rel="stylesheet" href="{assets}swagger-ui.css">
<link rel="icon" type="image/png" href="{assets}favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="{assets}favicon-16x16.png" sizes="16x16">
</head>
<body>
<noscript>This page renders <a href="{spec}">the OpenAPI document</a> (also as
<a href="{spec_yaml}">YAML</a>) with Swagger UI, which needs JavaScript.</noscript>
<div id="swagger-ui" data-spec-url="{spec}"></div>
<script src="{assets}swagger-ui-bundle.js" charset="utf-8"></script>
<script src="{assets}{init}" charset="utf-8"></script>
</body>
</html>
"""

_NO_ASSETS_PAGE = (
    b"Swagger UI is not installed on this node (the swagger-ui-py package); the contract is "
    b"still served at /openapi.json and /openapi.yaml.\n"
)


@dataclass(frozen=True, slots=True)
class Resource:
    """One static answer: rendered once, served from memory."""

    body: bytes
    content_type: str
    etag: str
    cache_control: str
    extra_headers: tuple[tuple[bytes, bytes], ...] = ()
    status: int = 200


def resource(
    body: bytes,
    content_type: str,
    cache_control: str,
    extra_headers: Iterable[tuple[bytes, bytes]] = (),
    status: int = 200,
) -> Resource:
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    return Resource(body, content_type, etag, cache_control, tuple(extra_headers), status)


_IF_NONE_MATCH = IF_NONE_MATCH_HEADER.lower().encode("ascii")  # as ASGI spells header names
_PUBLIC = ((b"access-control-allow-origin", b"*"),)  # public contract: any origin may read it


def openapi_resources(document: Mapping[str, Any]) -> dict[str, Resource]:
    """`/openapi.json` and `/openapi.yaml`: the same document, two serialisations."""
    as_json = json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
    as_yaml = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100).encode(
        "utf-8"
    )
    return {
        OPENAPI_JSON_PATH: resource(
            as_json, MEDIA_TYPE_APPLICATION_JSON, CONTRACT_CACHE_CONTROL, _PUBLIC
        ),
        OPENAPI_YAML_PATH: resource(
            as_yaml, "application/yaml; charset=utf-8", CONTRACT_CACHE_CONTROL, _PUBLIC
        ),
    }


def schema_path(schema_id: str, file_name: str) -> str:
    """The URL path a schema file is served at: the path of its `$id`, which must end in the
    file's own name under /spec/schemas/ (so relative `$ref`s between files resolve)."""
    path = urlsplit(schema_id).path
    if path != SCHEMAS_PREFIX + file_name:
        raise ValueError(
            f"{file_name}: $id {schema_id!r} does not end in {SCHEMAS_PREFIX}{file_name}"
        )
    return path


def schema_resources(
    schema_dir: Path | None = None, files: Iterable[str] = SCHEMA_FILES
) -> dict[str, Resource]:
    """Every JSON Schema file of the contract, byte for byte as written, at its `$id` path."""
    root = schema_dir if schema_dir is not None else spec_dir() / "schemas"
    found: dict[str, Resource] = {}
    for name in files:
        raw = (root / name).read_bytes()
        schema_id = json.loads(raw).get("$id")
        if not isinstance(schema_id, str):
            raise ValueError(f"{name}: no $id")
        found[schema_path(schema_id, name)] = resource(
            raw, "application/schema+json", CONTRACT_CACHE_CONTROL, _PUBLIC
        )
    return found


def swagger_ui_dir() -> Path | None:
    """The static folder of the installed swagger-ui-py package (found without importing it)."""
    found = importlib.util.find_spec(SWAGGER_UI_PACKAGE)
    if found is None or not found.submodule_search_locations:
        return None
    static = Path(next(iter(found.submodule_search_locations))) / "static"
    return static if (static / "swagger-ui-bundle.js").is_file() else None


def swagger_ui_version(static: Path) -> str:
    """The Swagger UI release the bundle reports about itself (e.g. 5.24.2)."""
    with (static / "swagger-ui-bundle.js").open("rb") as bundle:
        match = _BUNDLE_VERSION.search(bundle.read())
    return match.group(1).decode("ascii") if match else "unknown"


def docs_resources(document: Mapping[str, Any], static: Path | None) -> dict[str, Resource]:
    """The docs page at /docs and /docs/ (relative links, so a path prefix in front of the
    node keeps working), and the assets it loads from /docs/."""
    nosniff = ((b"x-content-type-options", b"nosniff"),)
    if static is None:
        missing = resource(
            _NO_ASSETS_PAGE, "text/plain; charset=utf-8", "no-store", nosniff, status=503
        )
        return {DOCS_PATH: missing, DOCS_PATH + "/": missing}
    info = document.get("info", {})
    title = html.escape(f"{info.get('title', 'API')} {info.get('version', '')} API docs".strip())
    version = html.escape(swagger_ui_version(static))
    page_headers = (*nosniff, (b"content-security-policy", DOCS_CSP.encode("ascii")))
    found: dict[str, Resource] = {}
    # From /docs, "docs/x" is /docs/x and "openapi.json" is /openapi.json; from /docs/, the
    # same targets are "x" and "../openapi.json".
    for path, assets, up in ((DOCS_PATH, "docs/", ""), (DOCS_PATH + "/", "", "../")):
        page = _PAGE.format(
            title=title,
            ui_version=version,
            assets=assets,
            init=INIT_SCRIPT,
            spec=up + OPENAPI_JSON_PATH.lstrip("/"),
            spec_yaml=up + OPENAPI_YAML_PATH.lstrip("/"),
        )
        found[path] = resource(
            page.encode("utf-8"), "text/html; charset=utf-8", CONTRACT_CACHE_CONTROL, page_headers
        )
    for name, content_type in SWAGGER_UI_ASSETS.items():
        found[f"{DOCS_PATH}/{name}"] = resource(
            (static / name).read_bytes(), content_type, ASSET_CACHE_CONTROL, nosniff
        )
    found[f"{DOCS_PATH}/{INIT_SCRIPT}"] = resource(
        _INIT_JS.encode("utf-8"), "text/javascript; charset=utf-8", ASSET_CACHE_CONTROL, nosniff
    )
    return found


def root_redirect() -> Resource:
    """`/` sends a browser to the docs. Relative ("docs"), so a path prefix in front of the
    node keeps working; not cached, since where it points may change between releases."""
    body = b"This is an A2A node; its API docs are at /docs.\n"
    return resource(body, "text/plain; charset=utf-8", "no-cache",
                    ((b"location", DOCS_PATH.lstrip("/").encode("ascii")),), status=302)


def build_resources(
    document: Mapping[str, Any],
    *,
    schema_dir: Path | None = None,
    schema_files: Iterable[str] = SCHEMA_FILES,
    swagger_static: Path | None = None,
    find_swagger_ui: bool = True,
) -> dict[str, Resource]:
    static = swagger_static
    if static is None and find_swagger_ui:
        static = swagger_ui_dir()
    return {
        **openapi_resources(document),
        **schema_resources(schema_dir, schema_files),
        **docs_resources(document, static),
        ROOT_PATH: root_redirect(),
    }


class SpecRoutes:
    """Answers the contract and docs paths itself; every other request goes to `app`.

    Install it outermost (Connexion's ``MiddlewarePosition.BEFORE_EXCEPTION``), passing the
    same document object the app was built from."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        document: Mapping[str, Any],
        resources: Mapping[str, Resource] | None = None,
    ) -> None:
        self.app = app
        self.resources = dict(resources) if resources is not None else build_resources(document)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.resources.get(scope.get("path", "")) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await _method_not_allowed(send)
            return
        headers = [
            (b"cache-control", found.cache_control.encode("ascii")),
            (b"etag", found.etag.encode("ascii")),
            *found.extra_headers,
        ]
        if found.status == 200 and none_match(_if_none_match(scope), found.etag):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        headers += [
            (b"content-type", found.content_type.encode("ascii")),
            (b"content-length", str(len(found.body)).encode("ascii")),
        ]
        await send({"type": "http.response.start", "status": found.status, "headers": headers})
        body = b"" if method == "HEAD" else found.body
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _if_none_match(scope: Scope) -> str | None:
    """Every If-None-Match header, joined as one list (RFC 9110 §5.3)."""
    values = [
        value.decode("latin-1")
        for name, value in scope.get("headers", ())
        if name.lower() == _IF_NONE_MATCH
    ]
    return ", ".join(values) if values else None


async def _method_not_allowed(send: Send) -> None:
    body = admin_error(ADMIN_ERROR_METHOD_NOT_ALLOWED, "Only GET and HEAD are allowed here")
    headers = [
        (b"allow", ALLOW),
        (b"content-type", MEDIA_TYPE_APPLICATION_JSON.encode()),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": 405, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
