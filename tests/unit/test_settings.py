"""Runtime settings: definitions from the spec, precedence, validation, cross-process writes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from synthorg.contract.spec import all_definitions
from synthorg.errors import InvalidValue, UnknownSetting
from synthorg.generated.models import A2AConfig
from synthorg.settings.definitions.a2a import definitions
from synthorg.settings.runtime import RuntimeSettings
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.settings import SqliteSettingsStore


def settings(data_dir: Path, config: A2AConfig | None = None) -> RuntimeSettings:
    return RuntimeSettings(SqliteSettingsStore(open_database(data_dir)), config or A2AConfig())


def test_the_seed_keys_and_the_rate_limits_with_their_defaults() -> None:
    defaults = {key: d.default for key, d in definitions().items()}
    assert defaults == {
        "client_timeout_seconds": 30.0,
        "push_verification_clock_skew_seconds": 300,
        "card_cache_max_entries": 512,
        "max_message_parts": 100,
        "peer_rate_limit_per_second": 0,
        "peer_rate_limit_burst": 20,
    }


def test_ranges_come_from_the_config_schema() -> None:
    schema = all_definitions()["A2AConfig"][1]["properties"]
    for key, definition in definitions().items():
        assert (definition.minimum, definition.maximum) == (
            schema[key]["minimum"],
            schema[key]["maximum"],
        )


def test_precedence_runtime_then_config_then_default(tmp_path: Path) -> None:
    s = settings(tmp_path, A2AConfig(max_message_parts=7))
    assert (s.view("a2a.max_message_parts").value, s.view("max_message_parts").source) == (
        7,
        "config",
    )
    assert s.view("a2a.card_cache_max_entries").source == "default"
    s.set("a2a.max_message_parts", 3)
    assert s.max_message_parts == 3 and s.view("max_message_parts").source == "runtime"
    change = s.reset("a2a.max_message_parts")
    assert (change.after.value, change.after.source) == (7, "config")
    assert (change.before.value, change.before.source) == (3, "runtime")


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("a2a.max_message_parts", 0, "from 1 to 1000"),
        ("a2a.max_message_parts", 1.5, "an integer"),
        ("a2a.max_message_parts", "5", "an integer"),
        ("a2a.max_message_parts", True, "an integer"),
        ("a2a.client_timeout_seconds", 0.01, "from 0.1 to 600"),
        ("a2a.client_timeout_seconds", float("nan"), "a number"),
        ("a2a.card_cache_max_entries", None, "an integer"),
    ],
)
def test_bad_values_name_the_key_and_range_and_write_nothing(
    tmp_path: Path, key: str, value: object, fragment: str
) -> None:
    s = settings(tmp_path)
    before = s.value(key)
    with pytest.raises(InvalidValue, match=key.replace(".", r"\.")) as caught:
        s.set(key, value)
    assert fragment in str(caught.value)
    assert caught.value.detail["key"] == key  # one owner names the setting and its range
    assert caught.value.detail["allowed"].startswith(("an integer", "a number"))
    assert s.value(key) == before and s.view(key).source == "default"


def test_unknown_key(tmp_path: Path) -> None:
    with pytest.raises(UnknownSetting, match=r"known: a2a\.client_timeout_seconds"):
        settings(tmp_path).set("a2a.bogus", 1)


def test_a_write_from_another_connection_is_seen_on_the_next_read(tmp_path: Path) -> None:
    reader = settings(tmp_path)
    seen: list[tuple[str, float | int]] = []
    reader.on_change(lambda key, value: seen.append((key, value)))
    assert reader.card_cache_max_entries == 512
    settings(tmp_path).set("a2a.card_cache_max_entries", 8)  # e.g. the CLI, another process
    assert reader.card_cache_max_entries == 8
    assert seen == [("card_cache_max_entries", 8)]


def test_concurrent_writes_end_in_one_consistent_value(tmp_path: Path) -> None:
    writers = [settings(tmp_path) for _ in range(8)]
    threads = [
        threading.Thread(target=w.set, args=("a2a.max_message_parts", 10 + i))
        for i, w in enumerate(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = {w.value("a2a.max_message_parts") for w in [*writers, settings(tmp_path)]}
    assert len(final) == 1 and final <= set(range(10, 18))
