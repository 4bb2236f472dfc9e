"""`synthorg-a2a spec`: print this node's contract, or check a peer's against it.

`spec [--bundle] [--format json|yaml]` prints the bundled OpenAPI 3.1 document, byte for byte
what a running node serves at /openapi.json (or /openapi.yaml): spec/ in one self-contained
file, every reference local, read from disk with no network access. `--bundle` names what is
printed for scripts and generators that need one file; the document is bundled either way.

`spec check TARGET` fetches a peer's published document and reports, method by method, whether
the peer offers our JSON-RPC methods and whether the requests we send and the results we read
are compatible (synthorg.contract.compat). TARGET is a peer's base URL (`/openapi.json` is
appended), the URL of a document (a path ending in .json, .yaml or .yml), a local file, or the
name of a catalog peer (its recorded endpoint is used).

Exit codes: 0 compatible (warnings allowed, unless --strict); 1 incompatible (or, with
--strict, any warning); 2 usage error, or TARGET is neither a URL, a file nor a catalog peer;
3 the peer's document could not be had: unreachable, an HTTP error, too large, not JSON or
YAML, or not an OpenAPI 3 document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import yaml

from synthorg.cli.common import (
    EXIT_OK,
    add_data_dir_option,
    data_dir,
    fail,
    open_catalog,
    print_json,
    shown,
)
from synthorg.contract.compat import SpecShapeError, compare_specs, render_table
from synthorg.contract.spec import bundled_openapi
from synthorg.names import canonical_peer_name
from synthorg.web.spec_routes import OPENAPI_JSON_PATH, OPENAPI_YAML_PATH, openapi_resources

if TYPE_CHECKING:
    from synthorg.cli.common import Subparsers

EXIT_INCOMPATIBLE = 1
EXIT_UNAVAILABLE = 3
DEFAULT_TIMEOUT = 10.0
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
_DOCUMENT_SUFFIXES = (".json", ".yaml", ".yml")


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser(
        "spec",
        help="print this node's OpenAPI contract, or check a peer's against it",
        description="Print the OpenAPI 3.1 document this node serves at /openapi.json "
        "(--format yaml: /openapi.yaml): spec/ bundled into one self-contained file, with no "
        "network access. Or, with 'check', compare a peer's published document with ours.",
    )
    group.add_argument(
        "--format", choices=("json", "yaml"), default="json", help="output format (json)"
    )
    group.add_argument(
        "--bundle",
        action="store_true",
        help="the bundled, self-contained document (every $ref local; what is printed "
        "either way)",
    )
    group.set_defaults(handler=run_print)
    commands = group.add_subparsers(dest="spec_command", metavar="COMMAND")
    check = commands.add_parser(
        "check",
        help="check a peer's published spec for compatibility with ours",
        description="Fetch a peer's OpenAPI document and report, for each of our JSON-RPC "
        "methods, whether the peer offers it and whether the requests we send and the results "
        "we read are compatible. Exit 0 compatible, 1 incompatible (with --strict: any "
        "warning too), 2 usage error, 3 the document could not be fetched or read.",
    )
    check.add_argument(
        "target",
        metavar="TARGET",
        help="a peer's base URL, the URL of its OpenAPI document, a local file, or a catalog "
        "peer name",
    )
    check.add_argument("--strict", action="store_true", help="treat warnings as incompatible")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"HTTP timeout (default {DEFAULT_TIMEOUT:g})",
    )
    add_data_dir_option(check)
    check.set_defaults(handler=run_check)


def run_print(args: argparse.Namespace) -> int:
    path = OPENAPI_YAML_PATH if args.format == "yaml" else OPENAPI_JSON_PATH
    sys.stdout.write(openapi_resources(bundled_openapi())[path].body.decode("utf-8"))
    return EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        fail("--timeout must be a positive number of seconds")
    source, document = load_target(args.target, args)
    try:
        report = compare_specs(bundled_openapi(), document)
    except SpecShapeError as exc:
        fail(f"{source}: {exc}", EXIT_UNAVAILABLE)
    if args.json:
        print_json({"source": source, **report.as_dict()})
    else:
        print(render_table(report, source))
    if not report.compatible or (args.strict and report.has_warnings):
        return EXIT_INCOMPATIBLE
    return EXIT_OK


def load_target(target: str, args: argparse.Namespace) -> tuple[str, Any]:
    """(where the document came from, the parsed document)."""
    if "://" in target:
        url = document_url(target)
        return url, fetch(url, args.timeout)
    path = Path(target)
    if path.is_file():
        try:
            raw = path.read_bytes()
        except OSError as exc:
            fail(f"{path}: {exc.strerror or exc}")
        return str(path), parse_document(raw, str(path))
    name = canonical_peer_name(target)
    if name is None:
        fail(f"{shown(target)} is not a URL, a file or a peer name")
    with open_catalog(data_dir(args)) as catalog:
        record = catalog.get(name)
    if record is None:
        fail(f"{shown(target)} is not a URL, a file or a catalog peer")
    url = document_url(record.endpoint)
    return url, fetch(url, args.timeout)


def document_url(url: str) -> str:
    """The document's URL: `url` itself when its path names a document, else `url` with
    /openapi.json appended (a peer's base URL, possibly with a path prefix)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        fail(f"{shown(url)}: not an http(s) URL")
    if parts.path.lower().endswith(_DOCUMENT_SUFFIXES):
        return url
    path = parts.path.rstrip("/") + OPENAPI_JSON_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def fetch(url: str, timeout: float) -> Any:
    headers = {"Accept": "application/json, application/yaml;q=0.9, */*;q=0.1"}
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True, max_redirects=5) as http,
            http.stream("GET", url, headers=headers) as response,
        ):
            if response.status_code != 200:
                fail(f"{url}: HTTP {response.status_code}", EXIT_UNAVAILABLE)
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_DOCUMENT_BYTES:
                    fail(f"{url}: larger than {MAX_DOCUMENT_BYTES} bytes", EXIT_UNAVAILABLE)
                chunks.append(chunk)
    except httpx.TimeoutException:
        fail(f"{url}: no answer within {timeout:g}s", EXIT_UNAVAILABLE)
    except httpx.HTTPError as exc:
        fail(f"{url}: cannot fetch ({type(exc).__name__})", EXIT_UNAVAILABLE)
    return parse_document(b"".join(chunks), url)


def parse_document(raw: bytes, source: str) -> Any:
    """JSON, else YAML (a superset); anything else is not a document we can read."""
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        fail(f"{source}: neither JSON nor YAML", EXIT_UNAVAILABLE)
