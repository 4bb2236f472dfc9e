"""The contract in spec/ is well formed: valid OpenAPI 3.1 and JSON Schema 2020-12, every `$ref`
resolves, definition names are unique, objects are closed, and A2A objects match the reference.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from synthorg.contract.spec import SCHEMA_FILES, all_definitions, bundled_openapi, spec_dir
from tests.support.a2a_reference import ReferenceDefinitions

SPEC = spec_dir()
OPENAPI = SPEC / "openapi.yaml"
SCHEMAS = SPEC / "schemas"

# Our definition -> the reference definition with the same wire shape.
A2A_OBJECTS = {
    "Message": "Message",
    "TextPart": "TextPart",
    "FilePart": "FilePart",
    "DataPart": "DataPart",
    "Task": "Task",
    "TaskStatus": "TaskStatus",
    "Artifact": "Artifact",
    "MessageSendConfiguration": "MessageSendConfiguration",
    "FileWithBytes": "FileWithBytes",
    "FileWithUri": "FileWithUri",
    "PushNotificationConfig": "PushNotificationConfig",
    "PushNotificationAuthenticationInfo": "PushNotificationAuthenticationInfo",
}
# Method params: ours add `method` (envelope precedence supplies it), otherwise the same shape.
A2A_PARAMS = {
    "MessageSendParams": "MessageSendParams",
    "TasksGetParams": "TaskQueryParams",
    "TasksCancelParams": "TaskIdParams",
}


# -- helpers ----------------------------------------------------------------------------------


def load_documents() -> dict[Path, Any]:
    """Every source document of the contract, by absolute path, freshly parsed."""
    documents: dict[Path, Any] = {OPENAPI: yaml.safe_load(OPENAPI.read_text("utf-8"))}
    for path in sorted(SCHEMAS.glob("*.json")):
        documents[path] = json.loads(path.read_text("utf-8"))
    return documents


def iter_refs(node: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    """(JSON pointer of the referring object, `$ref` value) for every `$ref` in a document."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield pointer or "/", ref
        for key, value in node.items():
            yield from iter_refs(value, f"{pointer}/{_escape(str(key))}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from iter_refs(item, f"{pointer}/{index}")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def resolve_pointer(document: Any, pointer: str) -> Any:
    """RFC 6901; raises LookupError when the pointer does not resolve."""
    if pointer in ("", "/"):
        return document
    if not pointer.startswith("/"):
        raise LookupError(f"not a JSON pointer: {pointer!r}")
    node = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise LookupError(f"no {token!r} in {pointer!r}")
    return node


def broken_refs(documents: dict[Path, Any]) -> list[str]:
    """Every `$ref` that does not resolve, as "file#pointer: ref (why)".

    File parts are resolved relative to the referring file; the fragment is a JSON pointer
    into the target document (which must be one of `documents`).
    """
    problems = []
    for path, document in documents.items():
        for where, ref in iter_refs(document):
            file_part, _, fragment = ref.partition("#")
            target_path = (path.parent / file_part).resolve() if file_part else path
            label = f"{path.name}#{where}: {ref}"
            if target_path not in documents:
                problems.append(f"{label} (no such file {target_path.name})")
                continue
            try:
                resolve_pointer(documents[target_path], fragment)
            except LookupError as exc:
                problems.append(f"{label} ({exc})")
    return problems


def duplicate_definitions(files: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Definition names found in more than one schema file -> the files."""
    seen: dict[str, list[str]] = {}
    for file_name, document in files.items():
        for name in document.get("$defs", {}):
            seen.setdefault(name, []).append(file_name)
    return {name: where for name, where in seen.items() if len(where) > 1}


_SCHEMA_MAP_KEYWORDS = ("properties", "$defs", "patternProperties", "dependentSchemas")
_SCHEMA_LIST_KEYWORDS = ("oneOf", "anyOf", "allOf", "prefixItems")
_SCHEMA_KEYWORDS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def iter_subschemas(schema: Any, pointer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (sub)schema, walking JSON Schema keywords only (a property named `properties`
    is not mistaken for the keyword)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for keyword in _SCHEMA_MAP_KEYWORDS:
        for name, sub in (schema.get(keyword) or {}).items():
            yield from iter_subschemas(sub, f"{pointer}/{keyword}/{_escape(name)}")
    for keyword in _SCHEMA_LIST_KEYWORDS:
        for index, sub in enumerate(schema.get(keyword) or []):
            yield from iter_subschemas(sub, f"{pointer}/{keyword}/{index}")
    for keyword in _SCHEMA_KEYWORDS:
        if isinstance(schema.get(keyword), dict):
            yield from iter_subschemas(schema[keyword], f"{pointer}/{keyword}")


def openapi_schema_roots(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """The schemas an OpenAPI document holds: every `schema` value and components/schemas."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{pointer}/{_escape(str(key))}"
            if key == "schema" and isinstance(value, dict):
                yield here, value
            elif key == "schemas" and pointer == "/components" and isinstance(value, dict):
                for name, schema in value.items():
                    yield f"{here}/{_escape(name)}", schema
            else:
                yield from openapi_schema_roots(value, here)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from openapi_schema_roots(item, f"{pointer}/{index}")


def open_objects(label: str, roots: Iterable[tuple[str, dict[str, Any]]]) -> list[str]:
    """Schemas (at or under `roots`) with `properties` that do not set
    `additionalProperties: false`."""
    found = []
    for root_pointer, root in roots:
        for pointer, schema in iter_subschemas(root, root_pointer):
            if "properties" in schema and schema.get("additionalProperties") is not False:
                found.append(f"{label}#{pointer}")
    return found


def reference_definitions() -> dict[str, Any]:
    return ReferenceDefinitions()


# -- OpenAPI and JSON Schema validity ----------------------------------------------------------


def test_bundled_openapi_is_valid_openapi_31() -> None:
    document = copy.deepcopy(bundled_openapi())
    assert document["openapi"].startswith("3.1.")
    validate(document, cls=OpenAPIV31SpecValidator)


def test_source_openapi_yaml_is_valid_openapi_31_with_file_refs() -> None:
    document = yaml.safe_load(OPENAPI.read_text("utf-8"))
    validate(document, base_uri=OPENAPI.as_uri(), cls=OpenAPIV31SpecValidator)


def test_openapi_validator_rejects_a_tampered_schema_type() -> None:
    """The validator is really looking at schemas: a bogus `type` is caught."""
    document = copy.deepcopy(bundled_openapi())
    document["components"]["schemas"]["Task"]["properties"]["id"] = {"type": "strin"}
    with pytest.raises(OpenAPIValidationError):
        validate(document, cls=OpenAPIV31SpecValidator)


def test_bundled_openapi_has_no_external_refs() -> None:
    refs = [ref for _, ref in iter_refs(bundled_openapi())]
    assert refs
    assert all(ref.startswith("#/") for ref in refs), [r for r in refs if not r.startswith("#/")]
    assert broken_refs({OPENAPI: bundled_openapi()}) == []


def test_bundle_holds_every_definition_of_every_schema_file() -> None:
    components = bundled_openapi()["components"]["schemas"]
    assert set(all_definitions()) <= set(components)


def test_schema_file_list_matches_the_files_on_disk() -> None:
    assert sorted(SCHEMA_FILES) == sorted(p.name for p in SCHEMAS.glob("*.json"))


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_schema_file_is_valid_json_schema_2020_12(path: Path) -> None:
    schema = json.loads(path.read_text("utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{path.name}")
    Draft202012Validator.check_schema(schema)


def test_meta_schema_check_rejects_a_tampered_schema() -> None:
    schema = json.loads((SCHEMAS / "a2a.json").read_text("utf-8"))
    schema["$defs"]["Identifier"]["minLength"] = -1
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema(schema)


# -- references ---------------------------------------------------------------------------------


def test_every_ref_in_the_source_files_resolves() -> None:
    documents = load_documents()
    assert sum(len(list(iter_refs(doc))) for doc in documents.values()) > 50
    assert broken_refs(documents) == []


def test_ref_checker_reports_each_kind_of_broken_ref() -> None:
    documents = load_documents()
    tampered = copy.deepcopy(documents)
    message = tampered[SCHEMAS / "a2a.json"]["$defs"]["Message"]["properties"]
    message["parts"]["$ref"] = "#/$defs/NoSuchParts"  # local pointer to nothing
    params = tampered[SCHEMAS / "methods.json"]["$defs"]["MessageSendParams"]["properties"]
    params["message"]["$ref"] = "a2a.json#/$defs/Mesage"  # cross-file, misspelt
    params["configuration"]["$ref"] = "nowhere.json#/$defs/X"  # missing file
    post = tampered[OPENAPI]["paths"]["/api/v1/a2a/"]["post"]
    post["responses"]["401"]["$ref"] = "#/components/responses/Nope"
    problems = broken_refs(tampered)
    assert len(problems) == 4, problems
    joined = "\n".join(problems)
    for needle in ("NoSuchParts", "Mesage", "nowhere.json", "responses/Nope"):
        assert needle in joined
    assert broken_refs(documents) == []  # the original was not touched


def test_resolve_pointer_unescapes_tokens() -> None:
    document = {"a/b": {"c~d": [1, {"e": 2}]}}
    assert resolve_pointer(document, "/a~1b/c~0d/1/e") == 2
    with pytest.raises(LookupError):
        resolve_pointer(document, "/a~1b/c~0d/2")


# -- definitions --------------------------------------------------------------------------------


def test_definition_names_are_unique_across_schema_files() -> None:
    files = {path.name: json.loads(path.read_text("utf-8")) for path in SCHEMAS.glob("*.json")}
    assert duplicate_definitions(files) == {}
    all_definitions()  # the loader's own check agrees


def test_duplicate_definition_check_catches_a_clash() -> None:
    files = {path.name: json.loads(path.read_text("utf-8")) for path in SCHEMAS.glob("*.json")}
    files["config.json"]["$defs"]["Task"] = {"type": "string"}
    assert duplicate_definitions(files) == {"Task": ["a2a.json", "config.json"]}


def test_every_object_with_properties_forbids_additional_properties() -> None:
    problems: list[str] = []
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text("utf-8"))
        problems += open_objects(path.name, [("", schema)])
    problems += open_objects("openapi.yaml", openapi_schema_roots(load_documents()[OPENAPI]))
    problems += open_objects("bundled", openapi_schema_roots(bundled_openapi()))
    assert problems == []


def test_open_object_check_catches_a_missing_additional_properties() -> None:
    schema = json.loads((SCHEMAS / "a2a.json").read_text("utf-8"))
    del schema["$defs"]["TaskStatus"]["additionalProperties"]
    schema["$defs"]["Task"]["properties"]["status"] = {
        "type": "object",
        "properties": {"x": {}},
        "additionalProperties": True,
    }
    assert open_objects("a2a.json", [("", schema)]) == [
        "a2a.json#/$defs/TaskStatus",
        "a2a.json#/$defs/Task/properties/status",
    ]


# -- A2A 0.3.0 reference ------------------------------------------------------------------------


@pytest.mark.parametrize(("ours", "theirs"), sorted(A2A_OBJECTS.items()))
def test_a2a_object_matches_the_reference_field_names(ours: str, theirs: str) -> None:
    reference = reference_definitions()[theirs]
    schema = all_definitions()[ours][1]
    assert set(schema["properties"]) == set(reference["properties"])
    assert sorted(schema.get("required", [])) == sorted(reference.get("required", []))


@pytest.mark.parametrize(("ours", "theirs"), sorted(A2A_PARAMS.items()))
def test_method_params_match_the_reference_apart_from_method(ours: str, theirs: str) -> None:
    reference = reference_definitions()[theirs]
    schema = all_definitions()[ours][1]
    assert set(schema["properties"]) - {"method"} == set(reference["properties"])
    assert sorted(schema.get("required", [])) == sorted(reference.get("required", []))


@pytest.mark.parametrize("name", ["Message", "TextPart", "FilePart", "DataPart", "Task"])
def test_a2a_kind_discriminators_match_the_reference(name: str) -> None:
    reference = reference_definitions()[name]
    schema = all_definitions()[name][1]
    assert schema["properties"]["kind"]["const"] == reference["properties"]["kind"]["const"]


def test_task_states_match_the_reference() -> None:
    reference = reference_definitions()["TaskState"]
    assert set(all_definitions()["TaskState"][1]["enum"]) == set(reference["enum"])


def test_message_roles_match_the_reference() -> None:
    reference = reference_definitions()["Message"]["properties"]["role"]
    assert set(all_definitions()["Role"][1]["enum"]) == set(reference["enum"])


def test_every_object_sharing_a_name_with_the_reference_matches_it() -> None:
    """Beyond the list above: any definition named like a reference object (the card objects,
    for one) has the same field names and required list."""
    reference = reference_definitions()
    compared, problems = [], []
    for name, (file_name, schema) in all_definitions().items():
        theirs = reference.get(name)
        if name in A2A_PARAMS or theirs is None or "properties" not in schema:
            continue
        compared.append(name)
        # Members of A2A 1.0 our cards carry beside the 0.3 ones (one document, both SDKs):
        # each security scheme in both shapes, and both security lists.
        added = {
            "AgentCard": {"supportedInterfaces", "securityRequirements"},
            "AgentCapabilities": {"extendedAgentCard"},
            "APIKeySecurityScheme": {"apiKeySecurityScheme"},
            "HTTPAuthSecurityScheme": {"httpAuthSecurityScheme"},
        }
        if set(schema["properties"]) - added.get(name, set()) != set(
            theirs.get("properties", {})
        ):
            problems.append(f"{file_name} {name}: fields differ")
        if sorted(schema.get("required", [])) != sorted(theirs.get("required", [])):
            problems.append(f"{file_name} {name}: required differs")
    assert set(A2A_OBJECTS) <= set(compared)
    assert problems == []


# -- free-form values are bounded ---------------------------------------------------------------


def _reachable(name: str, seen: set[str]) -> None:
    if name in seen:
        return
    seen.add(name)
    for _, schema in iter_subschemas(all_definitions()[name][1], ""):
        if "$ref" in schema:
            _reachable(schema["$ref"].rsplit("/", 1)[-1], seen)


# Bounded otherwise, or left alone on purpose.
UNBOUNDED_ON_PURPOSE = {
    "PeerName": "its pattern allows 1 to 63 characters",
    # A Task reaches us only as a peer's answer to our call, read with a 4 MiB cap
    # (synthorg/a2a/client.py); each of its messages and parts is bounded.
    "Task/properties/history": "left alone: as long as the task's conversation",
    "Task/properties/artifacts": "left alone: as many as the task produced",
}


def test_nothing_a_peer_sends_is_an_unbounded_free_form_value() -> None:
    """Params (RpcParams) and a peer's results (Task) reach no open object and no `{}` (any
    value): every free-form object names its members' schema, and every string is bounded."""
    names: set[str] = set()
    _reachable("RpcParams", names)
    _reachable("Task", names)
    assert {"Metadata", "Data", "MetadataLeaf", "DataLeaf", "FreeFormKey"} <= names
    problems = []
    for name in sorted(names):
        for pointer, schema in iter_subschemas(all_definitions()[name][1], name):
            types = schema.get("type")
            kinds = types if isinstance(types, list) else [types]
            if "object" in kinds and "properties" not in schema:
                if not isinstance(schema.get("additionalProperties"), dict):
                    problems.append(f"{pointer}: members of any value")
                if "propertyNames" not in schema or "maxProperties" not in schema:
                    problems.append(f"{pointer}: unbounded names or member count")
            if pointer in UNBOUNDED_ON_PURPOSE:
                continue
            if "array" in kinds and "maxItems" not in schema:
                problems.append(f"{pointer}: unbounded array")
            if "string" in kinds and not ({"maxLength", "enum", "const"} & set(schema)):
                problems.append(f"{pointer}: unbounded string")
            if set(schema) <= {"description", "title"}:
                problems.append(f"{pointer}: any value")
    assert problems == []


def _levels(name: str) -> list[dict[str, Any]]:
    """A free-form family from its top object down to its leaf, one schema per level."""
    chain = [all_definitions()[name][1]]
    while "additionalProperties" in chain[-1]:
        chain.append(all_definitions()[chain[-1]["additionalProperties"]["$ref"][8:]][1])
    return chain


def _width(schema: dict[str, Any]) -> int:
    if "maxItems" in schema:
        assert schema["maxItems"] == schema["maxProperties"], "arrays and objects alike"
        assert schema["items"] == schema["additionalProperties"]
    return int(schema["maxProperties"])


@pytest.mark.parametrize(("name", "levels"), [("Metadata", 4), ("Data", 5)])
def test_free_form_families_are_finite_and_say_how_deep_they_go(name: str, levels: int) -> None:
    chain = _levels(name)
    assert len(chain) == levels
    assert "array" not in chain[-1]["type"] and "object" not in chain[-1]["type"]
    assert len({level["maxLength"] for level in chain[1:]}) == 1, "one string bound"
    words = {4: "four", 5: "five"}
    assert f"{words[levels]} levels of nesting" in chain[0]["description"]


def test_the_metadata_worst_case_stated_is_the_one_the_bounds_give() -> None:
    chain = _levels("Metadata")
    name_length = all_definitions()["FreeFormKey"][1]["maxLength"]
    string_length = chain[-1]["maxLength"]
    values, count = 0, 1
    for level in chain[:-1]:
        count *= _width(level)
        values += count
    characters = values * name_length + count * string_length
    description = chain[0]["description"]
    assert (values, characters) == (9280, 35930112)
    assert f"= {values} values" in description
    assert f"= {characters} characters" in description


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    document = yaml.safe_load(OPENAPI.read_text())
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("get", "put", "post", "delete", "patch"):
                yield path, method, operation


def test_every_operation_that_takes_a_body_declares_413() -> None:
    """Every body is read under a ceiling (the gateway's, the admin API's, the push
    receiver's), and a body valid by its schema can still exceed it (strings of the longest
    allowed lengths, outside the BMP, are 12 bytes a character once JSON-escaped)."""
    missing = [f"{method.upper()} {path}" for path, method, operation in _operations()
               if "requestBody" in operation and "413" not in operation["responses"]]
    assert missing == []


def test_the_contract_runs_expect_413_from_every_operation_that_takes_a_body() -> None:
    config = tomllib.loads((SPEC.parent / "schemathesis.toml").read_text())
    accepting: dict[str, list[str]] = {}
    for entry in config.get("operations", []):
        statuses = entry.get("checks", {}).get("positive_data_acceptance", {}).get(
            "expected-statuses")
        for operation_id in entry.get("include-operation-id", []):
            if statuses is not None:
                accepting[operation_id] = statuses
    with_body = [operation["operationId"] for _, _, operation in _operations()
                 if "requestBody" in operation]
    assert {op: "413" in accepting.get(op, []) for op in with_body} == dict.fromkeys(
        with_body, True)
