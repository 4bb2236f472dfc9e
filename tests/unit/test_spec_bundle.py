"""The bundled document (`/openapi.json`, `synthorg-a2a spec --bundle`) is the multi-file spec.

Resolving every reference of the multi-file form (`$ref`s and discriminator `mapping`
targets, each against the file it is written in, as JSON Schema and OpenAPI resolve them)
must give what resolving the bundle's local references gives, node for node. The walk runs
over both documents in step and follows references on both sides together, so a reference
the bundler pointed at the wrong definition, a definition it changed, dropped or added, or a
mapping left pointing at another file, fails. The bundle must also be self-contained: no
reference leaves it, and nothing in it names a URL to fetch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin

import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from synthorg.contract.spec import (
    bundled_openapi,
    load_openapi_source,
    load_schema_files,
)

ROOT = Path(__file__).resolve().parents[2]
# The source document's own URI: `schemas/a2a.json` from it is the `$id` of spec/schemas/a2a.json.
SOURCE_URI = "https://synthorg.example/spec/openapi.yaml"
BUNDLE_URI = "https://bundle.invalid/openapi.json"  # any absolute URI: only its fragments are used


class Side:
    """One form of the contract: a registry of its documents, and how to follow a reference
    written in the document at `base`."""

    def __init__(self, documents: dict[str, Any]) -> None:
        self.registry: Registry[Any] = Registry().with_resources(
            (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
            for uri, doc in documents.items()
        )

    def follow(self, base: str, ref: str) -> tuple[str, str, Any]:
        """(the target's absolute URI, the base its own references resolve against, the
        target)."""
        target = urljoin(base, ref)
        resolved = self.registry.resolver().lookup(target)
        return target, urldefrag(target).url, resolved.contents


def multi_file() -> Side:
    documents: dict[str, Any] = {SOURCE_URI: load_openapi_source()}
    for schema in load_schema_files().values():
        documents[schema["$id"]] = schema
    return Side(documents)


def bundle_side(bundle: dict[str, Any]) -> Side:
    return Side({BUNDLE_URI: bundle})


class Walk:
    """Compares the multi-file form with the bundle, resolving references on both sides."""

    def __init__(self, multi: Side, bundle: Side) -> None:
        self.multi = multi
        self.bundle = bundle
        self.visited: set[tuple[str, str]] = set()  # reference pairs already compared
        self.problems: list[str] = []

    def compare(self, a: Any, a_base: str, b: Any, where: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            if set(a) != set(b):
                self.problems.append(f"{where}: keys {sorted(set(a) ^ set(b))} differ")
                return
            for key in a:
                here = f"{where}/{key}"
                if key == "$ref":
                    self.reference(a[key], a_base, b[key], here)
                elif key == "discriminator" and isinstance(a[key], dict):
                    self.discriminator(a[key], a_base, b[key], here)
                else:
                    self.compare(a[key], a_base, b[key], here)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                self.problems.append(f"{where}: {len(a)} items against {len(b)}")
                return
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                self.compare(x, a_base, y, f"{where}/{index}")
        elif a != b or type(a) is not type(b):
            self.problems.append(f"{where}: {a!r} against {b!r}")

    def discriminator(self, a: dict[str, Any], a_base: str, b: Any, where: str) -> None:
        if not isinstance(b, dict) or set(a) != set(b):
            self.problems.append(f"{where}: {a!r} against {b!r}")
            return
        if a["propertyName"] != b["propertyName"]:
            self.problems.append(f"{where}: propertyName differs")
        mapping_a, mapping_b = a.get("mapping", {}), b.get("mapping", {})
        if set(mapping_a) != set(mapping_b):
            self.problems.append(f"{where}: mapping keys differ")
            return
        for value, ref in mapping_a.items():
            self.reference(ref, a_base, mapping_b[value], f"{where}/mapping/{value}")

    def reference(self, ref_a: str, a_base: str, ref_b: Any, where: str) -> None:
        if not isinstance(ref_b, str) or not ref_b.startswith("#/"):
            self.problems.append(f"{where}: the bundle's reference {ref_b!r} is not local")
            return
        try:
            uri_a, base_a, target_a = self.multi.follow(a_base, ref_a)
            uri_b, _, target_b = self.bundle.follow(BUNDLE_URI, ref_b)
        except Exception as exc:  # any resolution failure is a finding, not a crash
            self.problems.append(f"{where}: {ref_a!r} / {ref_b!r} do not resolve ({exc})")
            return
        if (uri_a, uri_b) in self.visited:
            return
        self.visited.add((uri_a, uri_b))
        self.compare(target_a, base_a, target_b, f"{where} -> {ref_a}")


def bundle_problems(bundle: dict[str, Any]) -> list[str]:
    """Where `bundle` is not the multi-file spec with its references resolved."""
    walk = Walk(multi_file(), bundle_side(bundle))
    source = load_openapi_source()
    # The document itself, every schema it reaches followed through both forms.
    own = {key: value for key, value in bundle.items() if key != "components"}
    walk.compare({k: v for k, v in source.items() if k != "components"}, SOURCE_URI, own, "#")
    components = dict(bundle.get("components", {}))
    schemas = components.pop("schemas", {})
    walk.compare(source.get("components", {}), SOURCE_URI, components, "#/components")
    # Every definition of every file is in the bundle under its name, and nothing else is.
    expected: dict[str, tuple[str, Any]] = {}
    for schema_file in load_schema_files().values():
        for name, definition in schema_file.get("$defs", {}).items():
            expected[name] = (schema_file["$id"], definition)
    if set(schemas) != set(expected):
        walk.problems.append(f"components/schemas: {sorted(set(schemas) ^ set(expected))}")
    for name in sorted(set(schemas) & set(expected)):
        base, definition = expected[name]
        walk.compare(definition, base, schemas[name], f"#/components/schemas/{name}")
    return walk.problems


def urls_in(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [key for key in node if key in ("$id", "$schema", "$anchor", "$dynamicRef")]
        return found + [url for value in node.values() for url in urls_in(value)]
    if isinstance(node, list):
        return [url for item in node for url in urls_in(item)]
    return []


# -- the bundle is the multi-file spec ---------------------------------------------------------


def test_the_bundle_is_the_multi_file_spec_with_every_reference_resolved() -> None:
    assert bundle_problems(bundled_openapi()) == []


def test_every_discriminator_mapping_of_the_bundle_is_a_local_reference() -> None:
    schemas = bundled_openapi()["components"]["schemas"]
    unions = {name: s for name, s in schemas.items() if "discriminator" in s}
    assert set(unions) == {
        "Part", "StreamEvent", "JsonRpcRequest", "RpcParams", "V1RpcParams", "MessageSendResult",
    }
    for name, union in unions.items():
        mapping = union["discriminator"]["mapping"]
        assert sorted(mapping.values()) == sorted(v["$ref"] for v in union["oneOf"]), name
        assert all(ref.startswith("#/components/schemas/") for ref in mapping.values())


def test_the_bundle_names_nothing_to_fetch() -> None:
    assert urls_in(bundled_openapi()) == []
    assert "synthorg.example/spec" not in json.dumps(bundled_openapi())


def test_the_cli_prints_the_bundle() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", "spec", "--bundle"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(result.stdout) == bundled_openapi()


# -- the check catches what it is for ----------------------------------------------------------


def _tampered(change: str) -> dict[str, Any]:
    bundle = json.loads(json.dumps(bundled_openapi()))
    schemas = bundle["components"]["schemas"]
    if change == "retargeted ref":
        schemas["Message"]["properties"]["parts"]["$ref"] = "#/components/schemas/Artifact"
    elif change == "retargeted mapping":
        schemas["Part"]["discriminator"]["mapping"]["text"] = "#/components/schemas/DataPart"
    elif change == "external mapping":
        schemas["Part"]["discriminator"]["mapping"]["text"] = "a2a.json#/$defs/TextPart"
    elif change == "changed definition":
        schemas["TaskState"]["enum"] = schemas["TaskState"]["enum"][:-1]
    elif change == "dropped definition":
        del schemas["V1FieldViolation"]
    elif change == "extra definition":
        schemas["Extra"] = {"type": "string"}
    elif change == "changed path":
        bundle["paths"]["/healthz"]["get"]["summary"] = "something else"
    return bundle


@pytest.mark.parametrize(
    "change",
    [
        "retargeted ref",
        "retargeted mapping",
        "external mapping",
        "changed definition",
        "dropped definition",
        "extra definition",
        "changed path",
    ],
)
def test_the_comparison_finds_a_bundle_that_differs(change: str) -> None:
    assert bundle_problems(_tampered(change)) != []
