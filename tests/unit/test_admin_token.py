"""The operator's admin token: from the environment or a generated 0600 file, never shown."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from synthorg.admin.token import (
    TOKEN_ENV,
    TOKEN_FILENAME,
    AdminToken,
    AdminTokenError,
    bearer_credential,
    known_tokens,
)
from synthorg.config.company import ConfigError

ENV_TOKEN = "env-admin-token-7c1e9a3f5b"


@pytest.fixture(autouse=True)
def _no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


def test_first_load_generates_a_private_token_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    token = AdminToken.load(data_dir)
    path = data_dir / TOKEN_FILENAME
    assert (token.source, token.path, token.created) == ("file", path, True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    value = path.read_text().strip()
    assert len(value) >= 40 and token.matches(value.encode())
    assert [p.name for p in data_dir.iterdir()] == [TOKEN_FILENAME]  # no temporary left over


def test_later_loads_reuse_the_file(tmp_path: Path) -> None:
    first = AdminToken.load(tmp_path)
    again = AdminToken.load(tmp_path)
    assert again.digest == first.digest and not again.created


def test_concurrent_first_starts_agree_on_one_token(tmp_path: Path) -> None:
    barrier = threading.Barrier(8)
    tokens: list[AdminToken] = []

    def load() -> None:
        barrier.wait()
        tokens.append(AdminToken.load(tmp_path))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({t.digest for t in tokens}) == 1
    assert sum(t.created for t in tokens) == 1


def test_the_environment_wins_and_no_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, f"  {ENV_TOKEN}\n")
    token = AdminToken.load(tmp_path)
    assert (token.source, token.path) == ("env", None)
    assert token.matches(ENV_TOKEN.encode()) and not token.matches(b"other")
    assert not (tmp_path / TOKEN_FILENAME).exists()


@pytest.mark.parametrize("value", ["", "short", "has a space in it ok", "tab\there-long-enough"])
def test_an_unusable_environment_token_stops_the_node_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(TOKEN_ENV, value)
    with pytest.raises(AdminTokenError) as caught:
        AdminToken.load(tmp_path)
    assert isinstance(caught.value, ConfigError)  # `serve` reports it in one line, exit 2
    assert TOKEN_ENV in str(caught.value)
    if value.strip():
        assert value.strip() not in str(caught.value)


def test_a_damaged_token_file_is_reported_not_replaced(tmp_path: Path) -> None:
    (tmp_path / TOKEN_FILENAME).write_text("  \n")
    with pytest.raises(AdminTokenError, match="delete it"):
        AdminToken.load(tmp_path)
    assert (tmp_path / TOKEN_FILENAME).read_text() == "  \n"


def test_a_loose_token_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / TOKEN_FILENAME
    path.write_text("hand-written-token-0123456789\n")
    path.chmod(0o644)
    assert AdminToken.load(tmp_path).matches(b"hand-written-token-0123456789")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_repr_never_shows_the_token(tmp_path: Path) -> None:
    token = AdminToken.load(tmp_path)
    value = (tmp_path / TOKEN_FILENAME).read_text().strip()
    for text in (repr(token), str(token), f"{token}"):
        assert value not in text and "redacted" in text


@pytest.mark.parametrize(
    ("header", "credential"),
    [
        (b"Bearer abc", b"abc"),
        (b"bearer  abc ", b"abc"),
        (b"BEARER\tabc", b"abc"),
        (b"Basic abc", None),
        (b"Bearer", None),
        (b"Bearer   ", None),
        (b"abc", None),
    ],
)
def test_bearer_credential(header: bytes, credential: bytes | None) -> None:
    assert bearer_credential(header) == credential


def test_known_tokens_reads_without_creating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert known_tokens(tmp_path) == []
    assert not (tmp_path / TOKEN_FILENAME).exists()
    AdminToken.load(tmp_path)
    monkeypatch.setenv(TOKEN_ENV, ENV_TOKEN)
    assert [t.source for t in known_tokens(tmp_path)] == ["env", "file"]
