"""`config check`: every problem at once, with the line it is on; README examples validate."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

from synthorg.config.check import check_text
from synthorg.contract.spec import load_schema_files

ROOT = Path(__file__).resolve().parents[2]

BROKEN = """\
company:
  name: Acme
  bogus: 1
agents:
  - id: echo
    name: E
    executor: {kind: peer}
  - id: echo
    name: X
a2a:
  enabled: yes-please
  allowed_peers: [ok, 'Bad Name!']
  peer_url: http://x
  max_message_parts: 0
"""


def test_every_problem_is_reported_with_its_line() -> None:
    found = [(f.line, f.key) for f in check_text(BROKEN)]
    assert found == [
        (3, "company.bogus"),
        (7, "agents[0].executor.kind"),
        (7, "agents[0].executor.peer"),
        (8, "agents[1].id"),
        (11, "a2a.enabled"),
        (12, "a2a.allowed_peers[1]"),
        (13, "a2a.peer_url"),
        (14, "a2a.max_message_parts"),
    ]


def test_problems_name_the_catalog_for_moved_keys_and_the_range_for_values() -> None:
    by_key = {f.key: f.problem for f in check_text(BROKEN)}
    assert "connection catalog" in by_key["a2a.peer_url"]
    assert by_key["a2a.max_message_parts"] == "must be an integer from 1 to 1000; got 0"
    assert by_key["company.bogus"] == "unknown key"


def test_ranges_are_exact_and_name_the_value_given() -> None:
    text = (
        "a2a:\n  client_timeout_seconds: 600.5\n  max_request_body_bytes: big\n"
        "server:\n  max_connections: -1\n"
        f"company:\n  name: ''\n  description: '{'x' * 5000}'\n"
    )
    assert {f.key: f.problem for f in check_text(text)} == {
        "a2a.client_timeout_seconds": "must be a number from 0.1 to 600; got 600.5",
        "a2a.max_request_body_bytes": 'must be an integer from 1024 to 67108864; got "big"',
        "server.max_connections": "must be an integer from 1 to 1000000; got -1",
        "company.name": 'must be a string of 1 to 128 characters; got ""',
        "company.description": "must be a string of 0 to 4096 characters; "
        "got a string of 5000 characters",
    }


def test_yaml_syntax_error_names_its_line() -> None:
    [finding] = check_text("a2a:\n  enabled: true\n  allowed_peers: [a,\n")
    assert finding.line == 4 and "not valid YAML" in finding.problem


def test_a_valid_file_has_no_findings() -> None:
    assert check_text("a2a:\n  enabled: true\n  allowed_peers: [Synthorg-A]\n") == []


def readme_yaml_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


def test_readme_config_examples_validate_against_the_schema_and_the_checks() -> None:
    blocks = readme_yaml_blocks()
    assert blocks, "the README shows at least one config.yaml"
    schema = load_schema_files()["config.json"]
    for block in blocks:
        jsonschema.validate(yaml.safe_load(block), schema)  # what an editor would check
        assert check_text(block) == [], block


def test_cli_reports_all_problems_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(BROKEN)
    done = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", "config", "check", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == f"8 problem(s) in {path}"
    assert lines[0] == f"{path}:3: company.bogus: unknown key"


def test_cli_accepts_a_valid_file(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("a2a:\n  enabled: true\n")
    done = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", "config", "check", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(": ok")


def test_server_tls_files_are_loaded_as_the_node_would(tmp_path: Path) -> None:
    from examples.make_test_ca import issue, make_ca, write_node

    ca = make_ca()
    (tmp_path / "ca.pem").write_bytes(ca.pem)
    write_node(tmp_path, "node-a", issue(ca, "node-a"))
    write_node(tmp_path, "node-b", issue(ca, "node-b"))
    good = ("server:\n  tls:\n    cert_file: node-a.pem\n    key_file: node-a.key\n"
            "    ca_file: ca.pem\n")
    assert check_text(good, tmp_path) == []  # relative to the file's directory
    bad = ("server:\n  tls:\n    cert_file: node-a.pem\n    key_file: node-b.key\n"
           "    ca_file: missing.pem\n")
    findings = check_text(bad, tmp_path)
    assert [(f.line, f.key) for f in findings] == [(5, "server.tls.ca_file")]
    assert "missing.pem: no such file" in findings[0].problem
    mismatched = bad.replace("missing.pem", "ca.pem")
    findings = check_text(mismatched, tmp_path)
    assert [(f.line, f.key) for f in findings] == [(4, "server.tls.key_file")]
    assert "not a PEM certificate and its unencrypted private key" in findings[0].problem
    assert "BEGIN" not in findings[0].problem  # never the files' contents
    findings = check_text("server:\n  tls: {cert_file: a.pem}\n", tmp_path)
    assert [f.key for f in findings] == ["server.tls.key_file"]  # the schema's: required


def test_a_node_does_not_start_on_a_tls_file_it_cannot_load(tmp_path: Path) -> None:
    import pytest

    from synthorg.config.company import ConfigError
    from synthorg.node import prepare

    (tmp_path / "config.yaml").write_text(
        "server:\n  tls: {cert_file: nope.pem, key_file: nope.key}\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: server\.tls\.cert_file: .*nope\.pem: "
                       "no such file"):
        prepare(tmp_path)
