"""`synthorg-a2a peers ...`: the real CLI in a subprocess, against temporary data dirs.

The secrets here are distinctive strings so that a leak into any output is unambiguous.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synthorg.cli import main as cli_main
from synthorg.store.catalog import MIN_SECRET_LENGTH, PeerRecord
from synthorg.store.secretbox import KEY_ENV, KEY_FILENAME, SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import DB_FILENAME, open_database
from tests.support.node import NodeProcess, cli

SECRET = "cli-secret-7f3a9c-must-never-print"
SECRET_2 = "cli-rotated-secret-41be-must-never-print"
ENDPOINT = "http://127.0.0.1:8000"
PUBLIC_KEYS = {"name", "endpoint", "scheme", "rate_limit", "card_key", "binding", "created_at",
               "updated_at"}


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The key file in each tmp data dir is what the CLI and the node must share.
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


class Runner:
    """Runs the CLI against one data dir and keeps every output for leak checks."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.outputs: list[str] = []

    def __call__(self, *args: str, stdin: str | None = "", env: dict[str, str] | None = None,
                 ) -> subprocess.CompletedProcess[str]:
        result = cli(self.data_dir, *args, stdin=stdin, env=env, check=False)
        self.outputs.append(result.stdout + result.stderr)
        return result

    def add(self, name: str = "synthorg-a", secret: str = SECRET, *extra: str,
            endpoint: str = ENDPOINT) -> subprocess.CompletedProcess[str]:
        return self("peers", "add", name, "--endpoint", endpoint, *extra, stdin=secret)

    def assert_no_leak(self, *secrets: str) -> None:
        for text in self.outputs:
            for secret in secrets:
                assert secret not in text


@pytest.fixture
def run(data_dir: Path) -> Iterator[Runner]:
    runner = Runner(data_dir)
    yield runner
    runner.assert_no_leak(SECRET, SECRET_2)


def stored(data_dir: Path, name: str) -> PeerRecord | None:
    db = open_database(data_dir)
    try:
        return SqliteCatalog(db, SecretBox.for_data_dir(data_dir)).get(name)
    finally:
        db.close()


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


# --- add ----------------------------------------------------------------------------------


def test_add_reads_the_secret_from_stdin_dropping_one_newline(run: Runner, data_dir: Path) -> None:
    result = run.add("Synthorg-A", SECRET + "\n", endpoint=ENDPOINT + "/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"added peer synthorg-a (endpoint {ENDPOINT}, scheme api_key)"
    )
    record = stored(data_dir, "synthorg-a")
    assert record is not None
    assert (record.name, record.endpoint, record.scheme, record.secret) == (
        "synthorg-a", ENDPOINT, "api_key", SECRET
    )


def test_add_without_trailing_newline_keeps_the_secret_exact(run: Runner, data_dir: Path) -> None:
    assert run.add("peer-b", SECRET).returncode == 0
    record = stored(data_dir, "peer-b")
    assert record is not None and record.secret == SECRET


def test_only_one_trailing_newline_is_dropped(run: Runner, data_dir: Path) -> None:
    result = run.add("peer-b", SECRET + "\n\n")
    assert result.returncode == 2
    assert "whitespace" in one_error_line(result)
    assert stored(data_dir, "peer-b") is None


def test_add_reads_the_secret_from_an_environment_variable(run: Runner, data_dir: Path) -> None:
    # --secret-env wins over whatever is on stdin.
    result = run("peers", "add", "peer-c", "--endpoint", "https://c.example:9443",
                 "--scheme", "bearer", "--secret-env", "PEER_C_KEY",
                 stdin="ignored-stdin-value", env={"PEER_C_KEY": SECRET})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("added peer peer-c ")
    record = stored(data_dir, "peer-c")
    assert record is not None
    assert (record.endpoint, record.scheme, record.secret) == (
        "https://c.example:9443", "bearer", SECRET
    )


def test_add_replaces_an_existing_record(run: Runner, data_dir: Path) -> None:
    assert run.add("synthorg-a", SECRET).returncode == 0
    first = stored(data_dir, "synthorg-a")
    result = run.add("SYNTHORG-A", SECRET_2, "--scheme", "bearer",
                     endpoint="https://a.example")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "updated peer synthorg-a (endpoint https://a.example, scheme bearer)"
    )
    second = stored(data_dir, "synthorg-a")
    assert first is not None and second is not None
    assert (second.endpoint, second.scheme, second.secret) == (
        "https://a.example", "bearer", SECRET_2
    )
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    listed = json.loads(run("peers", "list", "--json", "--no-probe").stdout)
    assert [p["name"] for p in listed] == ["synthorg-a"]


def test_data_dir_option_overrides_the_environment(run: Runner, tmp_path: Path) -> None:
    other = tmp_path / "other"
    result = run("peers", "add", "peer-d", "--endpoint", ENDPOINT, "--data-dir", str(other),
                 stdin=SECRET)
    assert result.returncode == 0, result.stderr
    assert stored(other, "peer-d") is not None
    assert json.loads(run("peers", "list", "--json", "--no-probe").stdout) == []


def test_a_new_data_dir_is_private_and_holds_no_plaintext(run: Runner, tmp_path: Path) -> None:
    fresh = tmp_path / "nested" / "fresh"
    result = run("peers", "add", "peer-e", "--endpoint", ENDPOINT, "--data-dir", str(fresh),
                 stdin=SECRET)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    for name in (DB_FILENAME, KEY_FILENAME):
        assert stat.S_IMODE((fresh / name).stat().st_mode) == 0o600
    for path in fresh.iterdir():
        assert SECRET.encode() not in path.read_bytes()


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "endpoint", "extra", "expected"),
    [
        ("bad name", ENDPOINT, (), "invalid peer name 'bad name'"),
        (".leading-dot", ENDPOINT, (), "invalid peer name"),
        ("x" * 64, ENDPOINT, (), "invalid peer name"),
        ("peer-f", "ftp://f.example", (), "endpoint must be an absolute http(s) URL"),
        ("peer-f", "http://user:pw@f.example", (), "endpoint must be an absolute http(s) URL"),
        ("peer-f", "http://f.example/?q=1", (), "endpoint must be an absolute http(s) URL"),
        ("peer-f", "not a url", (), "endpoint must be an absolute http(s) URL"),
        ("peer-f", ENDPOINT, ("--scheme", "basic"), "argument --scheme: invalid choice"),
    ],
)
def test_invalid_input_exits_2_with_one_clear_line(
    run: Runner, name: str, endpoint: str, extra: tuple[str, ...], expected: str
) -> None:
    result = run.add(name, SECRET, *extra, endpoint=endpoint)
    assert result.returncode == 2
    assert expected in one_error_line(result)
    assert "user:pw" not in result.stderr  # an endpoint may carry credentials: not echoed
    assert result.stdout == ""
    assert not run.data_dir.exists()  # refused before anything was opened or created


@pytest.mark.parametrize(
    ("stdin", "env", "args", "expected"),
    [
        ("", None, (), "no secret given"),
        ("\n", None, (), "no secret given"),
        ("   ", None, (), "secret must not be blank"),
        ("", None, ("--secret-env", "PEER_KEY_UNSET"), "PEER_KEY_UNSET is not set"),
        ("", {"PEER_KEY_BLANK": "  "}, ("--secret-env", "PEER_KEY_BLANK"),
         "PEER_KEY_BLANK is empty"),
    ],
)
def test_a_missing_secret_exits_2(
    run: Runner, data_dir: Path, stdin: str, env: dict[str, str] | None,
    args: tuple[str, ...], expected: str,
) -> None:
    result = run("peers", "add", "peer-g", "--endpoint", ENDPOINT, *args, stdin=stdin, env=env)
    assert result.returncode == 2
    assert expected in one_error_line(result)
    assert stored(data_dir, "peer-g") is None


SHORT = "SHORT-LEAK-4e7a"  # one character short of MIN_SECRET_LENGTH


@pytest.mark.parametrize(
    ("stdin", "env", "args"),
    [
        (SHORT + "\n", None, ()),
        ("", {"PEER_KEY_SHORT": SHORT}, ("--secret-env", "PEER_KEY_SHORT")),
        # Remotely too, before the node is asked (nothing listens on the discard port).
        (SHORT, {"SYNTHORG_ADMIN_TOKEN": "cli-admin-token-0b5d2e8f"},
         ("--url", "http://127.0.0.1:9")),
    ],
)
def test_a_short_secret_is_refused_without_printing_it(
    run: Runner, data_dir: Path, stdin: str, env: dict[str, str] | None,
    args: tuple[str, ...],
) -> None:
    assert len(SHORT) == MIN_SECRET_LENGTH - 1
    result = run("peers", "add", "peer-s", "--endpoint", ENDPOINT, *args, stdin=stdin, env=env)
    assert result.returncode == 2
    assert one_error_line(result) == "error: secret must be at least 16 characters"
    assert result.stdout == ""
    run.assert_no_leak(SHORT)
    assert stored(data_dir, "peer-s") is None


def test_sixteen_characters_are_enough(run: Runner, data_dir: Path) -> None:
    assert run.add("peer-s", "x" * MIN_SECRET_LENGTH).returncode == 0
    record = stored(data_dir, "peer-s")
    assert record is not None and record.secret == "x" * MIN_SECRET_LENGTH


def test_usage_errors_exit_2(run: Runner) -> None:
    for args in ((), ("peers",), ("peers", "add", "peer-h"), ("peers", "frobnicate")):
        result = run(*args)
        assert result.returncode == 2, args
        one_error_line(result)


# --- list, show, remove -------------------------------------------------------------------


def test_list_and_show_never_print_the_secret(run: Runner) -> None:
    assert run.add("synthorg-a", SECRET).returncode == 0
    assert run.add("peer-z", SECRET_2, "--scheme", "bearer", "--binding", "HTTP+JSON",
                   endpoint="https://z.example").returncode == 0

    table = run("peers", "list", "--no-probe")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ENDPOINT", "SCHEME", "RATE", "BINDING", "CREATED",
                                "UPDATED"]
    assert [line.split()[:5] for line in lines[1:]] == [
        ["peer-z", "https://z.example", "bearer", "default", "HTTP+JSON"],
        ["synthorg-a", ENDPOINT, "api_key", "default", "card"],
    ]

    listed: list[dict[str, Any]] = json.loads(run("peers", "list", "--json", "--no-probe").stdout)
    assert [p["name"] for p in listed] == ["peer-z", "synthorg-a"]
    assert all(set(p) == PUBLIC_KEYS for p in listed)

    shown = run("peers", "show", "Synthorg-A")
    assert shown.returncode == 0
    # The secret's line says only that one is stored: not its value, nor its length.
    assert re.search(r"^secret:\s+\(stored, encrypted\)$", shown.stdout, re.MULTILINE)
    assert re.search(rf"^endpoint:\s+{re.escape(ENDPOINT)}$", shown.stdout, re.MULTILINE)

    as_json = json.loads(run("peers", "show", "peer-z", "--json").stdout)
    assert set(as_json) == PUBLIC_KEYS
    assert as_json["scheme"] == "bearer"
    # The `run` fixture then checks every output of this test for both secrets.


def test_list_and_show_print_a_peers_own_rate_limit(run: Runner) -> None:
    assert run.add("synthorg-a", SECRET, "--rate-limit", "2.5").returncode == 0
    assert run.add("peer-z", SECRET_2).returncode == 0

    rows = {line.split()[0]: line.split()[3]
            for line in run("peers", "list", "--no-probe").stdout.splitlines()[1:]}
    assert rows == {"synthorg-a": "2.5/s", "peer-z": "default"}
    listed = json.loads(run("peers", "list", "--json", "--no-probe").stdout)
    assert {p["name"]: p["rate_limit"] for p in listed} == {"synthorg-a": 2.5, "peer-z": None}

    assert run("peers", "update", "peer-z", "--rate-limit", "0").returncode == 0
    shown = run("peers", "show", "peer-z")
    assert re.search(r"^rate_limit:\s+none$", shown.stdout, re.MULTILINE), shown.stdout
    assert json.loads(run("peers", "show", "peer-z", "--json").stdout)["rate_limit"] == 0


def test_list_of_an_empty_catalog(run: Runner) -> None:
    result = run("peers", "list", "--no-probe")
    assert result.returncode == 0
    assert result.stdout.startswith("no peers in ")
    assert json.loads(run("peers", "list", "--json", "--no-probe").stdout) == []


def test_show_and_remove_of_an_unknown_peer_exit_1(run: Runner) -> None:
    for command in ("show", "remove"):
        result = run("peers", command, "nope")
        assert result.returncode == 1
        assert one_error_line(result) == "error: no peer named nope"


def test_remove(run: Runner, data_dir: Path) -> None:
    assert run.add("synthorg-a", SECRET).returncode == 0
    result = run("peers", "remove", "SYNTHORG-A")
    assert result.returncode == 0
    assert result.stdout.strip() == "removed peer synthorg-a"
    assert stored(data_dir, "synthorg-a") is None
    assert run("peers", "remove", "synthorg-a").returncode == 1
    assert run("peers", "show", "synthorg-a").returncode == 1


def test_a_terminal_is_prompted_without_echo(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return SECRET

    monkeypatch.setattr("sys.stdin", Tty())
    monkeypatch.setattr("getpass.getpass", fake_getpass)
    code = cli_main.main(
        ["peers", "add", "peer-t", "--endpoint", ENDPOINT, "--data-dir", str(data_dir)]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert prompts == ["secret for peer-t: "]
    assert SECRET not in out.out + out.err
    record = stored(data_dir, "peer-t")
    assert record is not None and record.secret == SECRET


# --- a running node sees catalog edits on its next request --------------------------------

NODE_CONFIG = """\
a2a:
  enabled: true
  allowed_peers: [synthorg-a]
"""


def _tasks_get(node: NodeProcess, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    payload = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
               "params": {"id": str(uuid.uuid4())}}
    with node.client() as client:
        response = client.post("/api/v1/a2a/", json=payload,
                               headers={"X-A2A-Peer-Name": "synthorg-a", **headers})
    body: dict[str, Any] = response.json()
    return response.status_code, body


def test_a_running_node_applies_cli_changes_to_the_next_request(tmp_path: Path) -> None:
    data_dir = tmp_path / "node"
    run = Runner(data_dir)
    with NodeProcess(data_dir, NODE_CONFIG) as node:
        # Allowlisted, but no catalog record yet: fail closed.
        status, body = _tasks_get(node, {"X-API-Key": SECRET})
        assert (status, body["error"]["code"]) == (401, -32003)

        assert run.add("synthorg-a", SECRET).returncode == 0
        status, body = _tasks_get(node, {"X-API-Key": SECRET})
        assert (status, body["id"], body["error"]["code"]) == (200, 7, -32001)

        # Rotate the secret: the old one stops working at once, the new one works.
        assert run.add("synthorg-a", SECRET_2).stdout.startswith("updated peer synthorg-a")
        assert _tasks_get(node, {"X-API-Key": SECRET})[0] == 401
        status, body = _tasks_get(node, {"X-API-Key": SECRET_2})
        assert (status, body["error"]["code"]) == (200, -32001)

        # Switch to the bearer scheme: X-API-Key no longer counts.
        assert run.add("synthorg-a", SECRET_2, "--scheme", "bearer").returncode == 0
        assert _tasks_get(node, {"X-API-Key": SECRET_2})[0] == 401
        assert _tasks_get(node, {"Authorization": f"Bearer {SECRET_2}"})[0] == 200

        assert run("peers", "remove", "synthorg-a").returncode == 0
        assert _tasks_get(node, {"Authorization": f"Bearer {SECRET_2}"})[0] == 401
    run.assert_no_leak(SECRET, SECRET_2)
    assert not any(SECRET in line or SECRET_2 in line for line in node.lines)


def test_rekey_reports_the_peer_records_and_push_configs_it_sealed_again(
    run: Runner, data_dir: Path
) -> None:
    from synthorg.push.sealing import SealedConfigs, Sealer
    from synthorg.store.sqlite.backend import SqliteStores

    assert run.add().returncode == 0
    stores = SqliteStores(data_dir)
    try:
        configs = SealedConfigs(stores.push_configs, Sealer(stores.box))
        config = {"id": "c-1", "url": "https://h.example/", "token": SECRET_2}
        asyncio.run(configs.put("synthorg-a", "t-1", config))
    finally:
        stores.close()
    result = run("peers", "rekey")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "re-encrypted 1 peer record and 1 push config with the newest key"
    )


# --- mtls ---------------------------------------------------------------------------------


def test_add_mtls_pins_the_key_of_a_certificate_file(run: Runner, data_dir: Path,
                                                     tmp_path: Path) -> None:
    from examples.make_test_ca import issue, make_ca, write_node

    node = issue(make_ca(), "node-b")
    write_node(tmp_path, "node-b", node)
    pem = str(tmp_path / "node-b.pem")
    result = run("peers", "add", "node-b", "--endpoint", "https://127.0.0.1:8443",
                 "--scheme", "mtls", "--cert", pem, stdin=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "added peer node-b (endpoint https://127.0.0.1:8443, scheme mtls)")
    record = stored(data_dir, "node-b")
    assert record is not None and (record.scheme, record.secret) == ("mtls", node.pin)
    https = "https://127.0.0.1:8443"
    # the pin may be given like a secret instead
    assert run.add("node-c", node.pin, "--scheme", "mtls", endpoint=https).returncode == 0
    # a secret that is not a pin is refused for scheme mtls, and so is plain http
    assert "sha256//" in one_error_line(
        run.add("node-d", SECRET, "--scheme", "mtls", endpoint=https))
    assert "https URL for scheme mtls" in one_error_line(
        run.add("node-d", node.pin, "--scheme", "mtls"))
    # --cert is for mtls only, and must name a certificate
    assert "--scheme mtls" in one_error_line(
        run.add("node-e", SECRET, "--cert", pem))
    assert "not a PEM certificate" in one_error_line(
        run.add("node-f", "", "--scheme", "mtls", "--cert", str(tmp_path / "node-b.key")))
    assert "cannot read" in one_error_line(
        run.add("node-g", "", "--scheme", "mtls", "--cert", str(tmp_path / "nope.pem")))
