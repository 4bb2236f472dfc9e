"""The company YAML and its `a2a` key: defaults, canonical peer names, and one-line errors that
name the file, the key and the problem."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from synthorg.config.company import ConfigError, load_config, parse_config
from synthorg.contract.spec import all_definitions
from synthorg.generated.models import A2AConfig

SOURCE = "/data/config.yaml"


def a2a_error(a2a: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"a2a": a2a}, SOURCE)
    return str(caught.value)


def config_error(data: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, SOURCE)
    return str(caught.value)


# -- defaults -------------------------------------------------------------------------------


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config.source is None
    assert config.a2a == A2AConfig()
    assert config.a2a.enabled is False
    assert config.allowed_peers == frozenset()
    assert [agent.id for agent in config.agents] == ["echo"]
    assert config.default_agent == "echo"
    assert config.company.name == "SynthOrg node"


def test_defaults_in_force_are_the_spec_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    schema = all_definitions()["A2AConfig"][1]["properties"]
    for key, prop in schema.items():
        if "default" in prop:
            assert getattr(config.a2a, key) == prop["default"], key


@pytest.mark.parametrize("text", ["", "# only a comment\n", "null\n"])
def test_empty_file_means_defaults(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    config = load_config(tmp_path)
    assert config.source == tmp_path / "config.yaml"
    assert config.a2a == A2AConfig()


def test_file_values_are_loaded(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "company:\n  name: Acme\n"
        "agents:\n  - id: writer\n    name: Writer\n    executor: {kind: park}\n"
        "a2a:\n  enabled: true\n  allowed_peers: [peer-a]\n  max_request_body_bytes: 2048\n"
        "  client_timeout_seconds: 5\n"
    )
    config = load_config(tmp_path)
    assert config.source == tmp_path / "config.yaml"
    assert config.company.name == "Acme"
    assert config.default_agent == "writer"
    assert config.a2a.enabled is True
    assert config.a2a.max_request_body_bytes == 2048
    assert config.a2a.client_timeout_seconds == 5
    assert config.allowed_peers == frozenset({"peer-a"})


# -- allowed peers ------------------------------------------------------------------------------


def test_allowed_peers_are_canonicalised() -> None:
    config = parse_config(
        {"a2a": {"allowed_peers": [" Synthorg-A ", "synthorg-a", "PEER.b_2"]}}, SOURCE
    )
    assert config.allowed_peers == frozenset({"synthorg-a", "peer.b_2"})


@pytest.mark.parametrize("bad", ["-leading-dash", "has space", "x" * 64, "caf\u00e9", "a/b"])
def test_invalid_allowed_peer_is_named_by_index(bad: str) -> None:
    message = a2a_error({"allowed_peers": ["good", bad]})
    assert message.startswith(f"{SOURCE}: a2a.allowed_peers[1]: ")
    assert "not a valid peer name" in message


# -- unknown and moved keys --------------------------------------------------------------------


def test_unknown_a2a_key_is_rejected_by_name() -> None:
    message = a2a_error({"enabled": True, "bogus": 1})
    assert "a2a.bogus" in message
    assert "unknown key" in message
    assert message.startswith(SOURCE)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"bogus_top": 1}, "bogus_top"),
        ({"company": {"name": "x", "budget": 3}}, "company.budget"),
        ({"agents": [{"id": "a", "name": "A", "colour": "red"}]}, "agents[0].colour"),
        (
            {"agents": [{"id": "a", "name": "A", "executor": {"kind": "echo", "x": 1}}]},
            "agents[0].executor.x",
        ),
    ],
)
def test_unknown_keys_anywhere_are_rejected_by_path(data: dict[str, Any], key: str) -> None:
    message = config_error(data)
    assert f": {key}: unknown key" in message


@pytest.mark.parametrize("key", ["peer_url", "peer_jwt_secret"])
def test_moved_keys_point_at_the_connection_catalog(key: str) -> None:
    message = a2a_error({key: "https://peer.example/ or a secret"})
    assert f"a2a.{key}" in message
    assert "connection catalog" in message
    assert "unknown key" not in message


def test_moved_key_message_never_echoes_the_value() -> None:
    message = a2a_error({"peer_jwt_secret": "s3cr3t-value-xyz"})
    assert "s3cr3t-value-xyz" not in message


# -- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_request_body_bytes", 1023),
        ("max_request_body_bytes", 67108865),
        ("client_timeout_seconds", 0.05),
        ("client_timeout_seconds", 601),
        ("push_verification_clock_skew_seconds", -1),
        ("push_verification_clock_skew_seconds", 86401),
        ("card_cache_max_entries", 0),
        ("card_cache_max_entries", 100001),
        ("max_message_parts", 0),
        ("max_message_parts", 1001),
    ],
)
def test_out_of_range_values_are_rejected_by_key(key: str, value: float) -> None:
    message = a2a_error({key: value})
    assert message.startswith(f"{SOURCE}: a2a.{key}: ")
    assert re.search(r": must be (an integer|a number) from \S+ to \S+; got ", message)
    assert message.endswith(f"; got {value}")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_request_body_bytes", 1024),
        ("max_request_body_bytes", 67108864),
        ("client_timeout_seconds", 0.1),
        ("client_timeout_seconds", 600),
        ("push_verification_clock_skew_seconds", 0),
        ("card_cache_max_entries", 100000),
        ("max_message_parts", 1),
        ("max_message_parts", 1000),
    ],
)
def test_boundary_values_are_accepted(key: str, value: float) -> None:
    config = parse_config({"a2a": {key: value}}, SOURCE)
    assert getattr(config.a2a, key) == value


@pytest.mark.parametrize(
    ("key", "value"),
    [("enabled", "yes"), ("max_message_parts", "5"), ("max_request_body_bytes", 2048.0)],
)
def test_values_are_strictly_typed(key: str, value: Any) -> None:
    assert a2a_error({key: value}).startswith(f"{SOURCE}: a2a.{key}: ")


def test_explicit_null_for_an_optional_key_is_rejected() -> None:
    message = a2a_error({"node_name": None})
    assert "a2a.node_name" in message
    assert "null is not allowed" in message


def test_top_level_must_be_a_mapping() -> None:
    assert config_error(["a2a"]) == f"{SOURCE}: (top level): must be a mapping of keys to values"


# -- YAML -----------------------------------------------------------------------------------------


def test_yaml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("a2a:\n  enabled: true\n  allowed_peers: [a, b\n  other: 1\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{path}: line ")
    assert "not valid YAML" in message
    line = int(message.split("line ", 1)[1].split(":", 1)[0])
    assert 3 <= line <= 4


def test_yaml_tab_indentation_error_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("a2a:\n  enabled: true\n\tbad: 1\n")
    with pytest.raises(ConfigError, match=r": line 3: not valid YAML"):
        load_config(tmp_path)


def test_non_utf8_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_bytes(b"a2a:\n  node_name: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: \(file\): cannot be read"):
        load_config(tmp_path)


def test_json_is_valid_yaml_too(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(json.dumps({"a2a": {"enabled": True}}))
    assert load_config(tmp_path).a2a.enabled is True


# -- agents ---------------------------------------------------------------------------------------


def test_duplicate_agent_ids_are_rejected() -> None:
    message = config_error(
        {"agents": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}, {"id": "a", "name": "C"}]}
    )
    assert message == f"{SOURCE}: agents[2].id: duplicate agent id 'a'"


def test_peer_executor_requires_a_peer() -> None:
    message = config_error({"agents": [{"id": "fwd", "name": "F", "executor": {"kind": "peer"}}]})
    assert message == f"{SOURCE}: agents[0].executor.peer: required when kind is peer"


def test_peer_executor_with_a_peer_is_accepted() -> None:
    config = parse_config(
        {
            "agents": [{"id": "fwd", "name": "F", "executor": {"kind": "peer", "peer": "peer-b"}}],
            "a2a": {"node_name": "node-a"},
        },
        SOURCE,
    )
    executor = config.agents[0].executor
    assert executor is not None and executor.peer == "peer-b"


def test_peer_executor_needs_this_nodes_name() -> None:
    message = config_error(
        {"agents": [{"id": "fwd", "name": "F", "executor": {"kind": "peer", "peer": "peer-b"}}]}
    )
    assert message == (
        f"{SOURCE}: agents[0].executor.kind: peer forwarding needs a2a.node_name "
        "(the name peers know this node by)"
    )


@pytest.mark.parametrize("kind", ["shell", "", "ECHO"])
def test_unknown_executor_kind_is_rejected(kind: str) -> None:
    message = config_error({"agents": [{"id": "a", "name": "A", "executor": {"kind": kind}}]})
    assert message.startswith(f"{SOURCE}: agents[0].executor.kind: ")


def test_invalid_agent_id_is_rejected() -> None:
    message = config_error({"agents": [{"id": "Bad Id", "name": "A"}]})
    assert message.startswith(f"{SOURCE}: agents[0].id: ")


# -- server: the HTTP server's connection limits --------------------------------------------


def test_server_limits_default_to_the_spec_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    schema = all_definitions()["ServerConfig"][1]["properties"]
    assert set(schema) == {
        "max_header_bytes",
        "max_header_count",
        "header_timeout_seconds",
        "body_timeout_seconds",
        "keepalive_timeout_seconds",
        "max_connections",
        "tls",
        "grpc_port",
    }
    assert config.server.tls is None  # plain HTTP unless server.tls is given
    assert config.server.grpc_port is None  # no gRPC listener unless it is given
    for key, prop in schema.items():
        if key in ("tls", "grpc_port"):
            continue
        assert getattr(config.server, key) == prop["default"], key
        assert {"type", "minimum", "maximum", "default", "description"} <= set(prop), key


def test_server_limits_are_read_from_the_file() -> None:
    config = parse_config(
        {"server": {"max_connections": 3, "header_timeout_seconds": 0.5}}, SOURCE
    )
    assert config.server.max_connections == 3
    assert config.server.header_timeout_seconds == 0.5
    assert config.server.body_timeout_seconds == 30.0


@pytest.mark.parametrize(
    ("server", "key", "problem"),
    [
        ({"max_header_byte": 1}, "server.max_header_byte", "unknown key"),
        ({"max_header_bytes": 100}, "server.max_header_bytes", "4096"),
        ({"max_connections": 0}, "server.max_connections", "1"),
        ({"body_timeout_seconds": "slow"}, "server.body_timeout_seconds", "number"),
    ],
)
def test_a_bad_server_key_names_the_key(server: dict[str, Any], key: str, problem: str) -> None:
    message = config_error({"server": server})
    assert message.startswith(f"{SOURCE}: {key}: "), message
    assert problem in message


@pytest.mark.parametrize("options", [{"reply": "task"}, {"other": 1}, {"reply": None}])
def test_echo_takes_only_the_direct_reply_option(options: dict[str, Any]) -> None:
    agent = {"id": "e", "name": "E", "executor": {"kind": "echo", "options": options}}
    assert "echo takes only {reply: message}" in config_error({"agents": [agent]})
    fine = {"id": "e", "name": "E", "executor": {"kind": "echo", "options": {"reply": "message"}}}
    assert parse_config({"agents": [fine]}, SOURCE).agents[0].executor is not None
