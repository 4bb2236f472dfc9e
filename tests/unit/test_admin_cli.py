"""`synthorg-a2a settings ...` on a data dir, and the CLI's side of the admin token rules.

Run in process through `synthorg.cli.main.main` (fast); the live tests run the real console
script against running nodes, locally and with `--url`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synthorg.admin.token import TOKEN_ENV, TOKEN_FILENAME, AdminToken
from synthorg.cli.admin_client import sends_token_in_clear
from synthorg.cli.main import main
from synthorg.generated.models import A2AConfig
from synthorg.settings.runtime import RuntimeSettings
from synthorg.store.secretbox import KEY_ENV, SecretBox
from synthorg.store.select import open_stores
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database

ENV_TOKEN = "env-admin-token-for-cli-0d8e2b"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    (path / "config.yaml").write_text("a2a:\n  max_message_parts: 20\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str, stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        import io

        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def stored(data_dir: Path, key: str) -> float | int:
    stores = open_stores(data_dir)
    try:
        return RuntimeSettings(stores.settings, A2AConfig()).value(key)
    finally:
        stores.close()


def audit(data_dir: Path) -> list[dict[str, Any]]:
    stores = open_stores(data_dir)
    try:
        return stores.audit.list()
    finally:
        stores.close()


def test_list_shows_value_source_default_and_range(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "settings", "list", "--data-dir", str(data_dir))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "SOURCE", "DEFAULT", "ALLOWED"]
    parts = next(line for line in lines if line.startswith("a2a.max_message_parts")).split()
    assert parts[:4] == ["a2a.max_message_parts", "20", "config", "100"]
    assert " ".join(parts[4:]) == "an integer from 1 to 1000"
    code, out, _ = run(capsys, "settings", "list", "--json", "--data-dir", str(data_dir))
    assert len(json.loads(out)) == 6 and json.loads(out)[0]["name"] == "a2a.client_timeout_seconds"


def test_set_get_reset_with_or_without_the_namespace(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "settings", "set", "max_message_parts", "5",
                       "--data-dir", str(data_dir))
    assert (code, out) == (0, "a2a.max_message_parts = 5 (runtime; was 20 from config)\n")
    assert stored(data_dir, "a2a.max_message_parts") == 5
    code, out, _ = run(capsys, "settings", "get", "a2a.max_message_parts", "--json",
                       "--data-dir", str(data_dir))
    assert json.loads(out)["value"] == 5 and json.loads(out)["source"] == "runtime"
    code, out, _ = run(capsys, "settings", "reset", "a2a.max_message_parts",
                       "--data-dir", str(data_dir))
    assert (code, out) == (0, "a2a.max_message_parts = 20 (config; was 5 from runtime)\n")
    code, out, _ = run(capsys, "settings", "set", "client_timeout_seconds", "0.5",
                       "--data-dir", str(data_dir))
    assert code == 0 and "= 0.5 (runtime; was 30.0 from default)" in out


def test_cli_writes_are_audited_in_the_data_dir(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "settings", "set", "card_cache_max_entries", "64", "--data-dir", str(data_dir))
    run(capsys, "settings", "reset", "card_cache_max_entries", "--data-dir", str(data_dir))
    changed, reset = audit(data_dir)
    assert {k: changed[k] for k in ("event", "via", "key", "old", "new")} == {
        "event": "admin.setting.changed", "via": "cli", "key": "a2a.card_cache_max_entries",
        "old": 512, "new": 64,
    }
    assert (reset["event"], reset["old"], reset["new"], reset["new_source"]) == (
        "admin.setting.reset", 64, 512, "default"
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_message_parts", "0", "a2a.max_message_parts must be an integer from 1 to 1000"),
        ("max_message_parts", "5.0", "a2a.max_message_parts must be an integer from 1 to 1000"),
        ("max_message_parts", "five", "a2a.max_message_parts must be an integer from 1 to 1000"),
        ("max_message_parts", "true", "a2a.max_message_parts must be an integer from 1 to 1000"),
        ("max_message_parts", "NaN", "a2a.max_message_parts must be an integer from 1 to 1000"),
        ("client_timeout_seconds", "-1", "a2a.client_timeout_seconds must be a number from 0.1 "
         "to 600"),
        ("push_verification_clock_skew_seconds", "86401",
         "a2a.push_verification_clock_skew_seconds must be an integer from 0 to 86400"),
        ("a2a.bogus", "1", "unknown setting 'a2a.bogus'; known: a2a.client_timeout_seconds"),
    ],
)
def test_bad_values_exit_2_naming_key_and_range_and_write_nothing(
    data_dir: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, message: str
) -> None:
    code, out, err = run(capsys, "settings", "set", key, value, "--data-dir", str(data_dir))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    if not message.startswith("unknown"):  # the value as typed, whatever was wrong with it
        assert err.endswith(f"; got {value}\n")
    assert audit(data_dir) == []


def test_url_and_data_dir_exclude_each_other(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "settings", "list", "--url", "http://127.0.0.1:9",
                       "--data-dir", str(data_dir))
    assert code == 2 and "exclude each other" in err


def test_remote_mode_needs_a_token_and_never_shows_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "settings", "list", "--url", "http://127.0.0.1:9")
    assert code == 2 and "SYNTHORG_ADMIN_TOKEN is not set" in err and "--token-file" in err
    short = tmp_path / "short.token"
    short.write_text("tiny-token\n")
    code, _, err = run(capsys, "settings", "list", "--url", "http://127.0.0.1:9",
                       "--token-file", str(short))
    assert code == 2 and "16 to 4096 characters" in err and "tiny-token" not in err
    code, _, err = run(capsys, "peers", "list", "--url", "http://127.0.0.1:9",
                       "--token-file", str(tmp_path / "missing"))
    assert code == 2 and "cannot read" in err
    monkeypatch.setenv(TOKEN_ENV, ENV_TOKEN)
    code, _, err = run(capsys, "settings", "get", "max_message_parts", "--url",
                       "http://127.0.0.1:9")  # nothing listens on the discard port
    assert code == 3 and "cannot reach" in err and ENV_TOKEN not in err


@pytest.mark.parametrize(
    ("url", "in_clear"),
    [
        ("http://127.0.0.1:8000", False),
        ("http://localhost:8000", False),
        ("http://[::1]:8000", False),
        ("https://node.example", False),
        ("http://node.example:8000", True),
        ("http://10.0.0.5:8000", True),
    ],
)
def test_plain_http_to_another_host_is_flagged(url: str, in_clear: bool) -> None:
    # The CLI warns on stderr before sending the token in these cases (no network used here).
    assert sends_token_in_clear(url) is in_clear


def test_peers_add_refuses_the_admin_token_as_a_secret(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    AdminToken.load(data_dir)  # as a node's first start would
    file_token = (data_dir / TOKEN_FILENAME).read_text().strip()
    monkeypatch.setenv(TOKEN_ENV, ENV_TOKEN)
    for secret in (file_token, ENV_TOKEN):
        code, out, err = run(capsys, "peers", "add", "twin", "--endpoint", "http://h",
                             "--data-dir", str(data_dir), stdin=secret + "\n",
                             monkeypatch=monkeypatch)
        assert code == 2 and "admin token" in err
        assert secret not in out + err
    db = open_database(data_dir)
    try:
        assert SqliteCatalog(db, SecretBox.for_data_dir(data_dir)).get("twin") is None
    finally:
        db.close()


def test_peers_add_and_remove_are_audited_without_the_secret(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "cli-peer-secret-LEAKCHECK-55aa"
    for _ in range(2):
        run(capsys, "peers", "add", "p1", "--endpoint", "http://h", "--data-dir", str(data_dir),
            stdin=secret, monkeypatch=monkeypatch)
    assert run(capsys, "peers", "remove", "P1", "--data-dir", str(data_dir))[0] == 0
    trail = audit(data_dir)
    assert [(e["event"], e["via"], e["peer"]) for e in trail] == [
        ("admin.peer.created", "cli", "p1"),
        ("admin.peer.replaced", "cli", "p1"),
        ("admin.peer.deleted", "cli", "p1"),
    ]
    assert trail[1]["secret_changed"] is False
    assert secret not in json.dumps(trail)
