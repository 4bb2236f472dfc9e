"""SecretBox: Fernet encryption at rest for peer secrets, key management, no leaks."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from synthorg.store.secretbox import KEY_ENV, KEY_FILENAME, SecretBox, SecretBoxError

SECRET = "s3cr3t-value-that-must-never-leak"


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_round_trip_and_ciphertext_hides_plaintext() -> None:
    box = SecretBox(Fernet.generate_key())
    token = box.encrypt(SECRET)
    assert SECRET.encode() not in token
    assert box.decrypt(token) == SECRET
    assert box.decrypt(box.encrypt("ünïcødé ✓")) == "ünïcødé ✓"


def test_key_file_created_private_in_new_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    box = SecretBox.for_data_dir(data_dir)
    key_file = data_dir / KEY_FILENAME
    assert mode(key_file) == 0o600
    assert mode(data_dir) == 0o700
    assert [p.name for p in data_dir.iterdir()] == [KEY_FILENAME]  # no temp files left
    # A later process reads the same key back.
    assert SecretBox.for_data_dir(data_dir).decrypt(box.encrypt(SECRET)) == SECRET


def test_existing_key_file_is_tightened_to_0600(tmp_path: Path) -> None:
    key_file = tmp_path / KEY_FILENAME
    key = Fernet.generate_key()
    key_file.write_bytes(key + b"\n")
    key_file.chmod(0o644)
    box = SecretBox.for_data_dir(tmp_path)
    assert mode(key_file) == 0o600
    assert SecretBox(key).decrypt(box.encrypt(SECRET)) == SECRET


def test_env_key_overrides_the_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = Fernet.generate_key()
    monkeypatch.setenv(KEY_ENV, key.decode())
    box = SecretBox.for_data_dir(tmp_path)
    assert not (tmp_path / KEY_FILENAME).exists()
    assert SecretBox(key).decrypt(box.encrypt(SECRET)) == SECRET


@pytest.mark.parametrize("bad", ["not-a-fernet-key-but-secret-material", "   "])
def test_bad_env_key_is_a_clear_error_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv(KEY_ENV, bad)
    with pytest.raises(SecretBoxError, match=KEY_ENV) as info:
        SecretBox.for_data_dir(tmp_path)
    assert bad.strip() == "" or bad not in str(info.value)
    # No chained exception may carry the key into a traceback either.
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__


def test_corrupt_key_file_is_a_clear_error_without_its_content(tmp_path: Path) -> None:
    (tmp_path / KEY_FILENAME).write_text("corrupt-key-material")
    with pytest.raises(SecretBoxError, match=r"secret\.key") as info:
        SecretBox.for_data_dir(tmp_path)
    assert "corrupt-key-material" not in str(info.value)


def test_undecryptable_value_is_a_clear_error_without_the_secret() -> None:
    token = SecretBox(Fernet.generate_key()).encrypt(SECRET)
    other = SecretBox(Fernet.generate_key())
    for bad in (token, b"garbage", token[:-4] + b"AAAA"):
        with pytest.raises(SecretBoxError, match="could not be decrypted") as info:
            other.decrypt(bad)
        assert SECRET not in str(info.value)
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_repr_redacts_the_key() -> None:
    key = Fernet.generate_key()
    assert key.decode() not in repr(SecretBox(key))


def test_racing_creators_agree_on_one_key(tmp_path: Path) -> None:
    workers = 8
    barrier = threading.Barrier(workers)
    boxes: list[SecretBox] = []
    errors: list[BaseException] = []

    def create() -> None:
        barrier.wait()
        try:
            boxes.append(SecretBox.for_data_dir(tmp_path))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    token = boxes[0].encrypt(SECRET)
    assert all(box.decrypt(token) == SECRET for box in boxes)
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILENAME]
    assert mode(tmp_path / KEY_FILENAME) == 0o600
