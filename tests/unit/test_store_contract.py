"""The contract of the catalog, settings, delegation and audit stores, on both backends.

Every test runs on SQLite (a data dir) and on PostgreSQL (a throwaway database), through the
bundle `synthorg.store.select` hands the node, with two bundles on one store standing for two
processes or replicas: what one writes, the other reads, from its next request.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from synthorg.dialects.objects import task_v1
from synthorg.errors import SecretUnreadable
from synthorg.generated.constants import (
    TASK_STATE_CANCELED,
    TASK_STATE_COMPLETED,
    TASK_STATE_INPUT_REQUIRED,
    TASK_STATE_SUBMITTED,
    TASK_STATE_WORKING,
)
from synthorg.generated.models import Task, V1Task
from synthorg.store.backend import Stores
from synthorg.store.delegations import Delegation, load_task_v03
from synthorg.store.postgres.backend import PgStores
from synthorg.store.postgres.options import PgOptions
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.backend import SqliteStores
from tests.conftest import BACKENDS

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class Bundles:
    """Store bundles on one store (as separate processes or replicas hold them)."""

    def __init__(self, data_dir: Path, url: str | None) -> None:
        self.data_dir, self.url = data_dir, url
        self.key = Fernet.generate_key().decode()
        self._opened: list[Stores] = []

    def open(self, key: str | None = None) -> Stores:
        stores: Stores
        if self.url is None:
            (self.data_dir / "secret.key").parent.mkdir(parents=True, exist_ok=True)
            (self.data_dir / "secret.key").write_text((key or self.key) + "\n")
            stores = SqliteStores(self.data_dir)
        else:
            stores = PgStores(PgOptions(self.url), SecretBox(key or self.key))
            stores.migrate()
        self._opened.append(stores)
        return stores

    def close(self) -> None:
        for stores in self._opened:
            stores.close()


@pytest.fixture(params=BACKENDS)
def bundles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Bundles]:
    url = request.getfixturevalue("postgres_database") if request.param == "postgresql" else None
    opened = Bundles(tmp_path / "data", url)
    yield opened
    opened.close()


# -- schema ---------------------------------------------------------------------------------


def test_a_fresh_store_is_migrated_to_the_latest_version(bundles: Bundles) -> None:
    state = bundles.open().schema()
    assert state.current == state.latest and state.pending == () and not state.too_new
    assert run(bundles.open().ready())


# -- catalog --------------------------------------------------------------------------------


def test_catalog_round_trip_list_remove_and_other_handles(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    assert one.catalog.put("Peer-B", "http://b.example/", "bearer", "secret-b") is True
    assert one.catalog.put("peer-a", "http://a.example", "api_key", "secret-a") is True
    record = two.catalog.get("peer-b")  # the other handle sees it at once
    assert record is not None
    assert (record.name, record.endpoint, record.scheme, record.secret) == (
        "peer-b", "http://b.example", "bearer", "secret-b")
    created = record.created_at
    assert two.catalog.put("peer-b", "http://b2.example", "api_key", "secret-b2") is False
    replaced = one.catalog.get("peer-b")
    assert replaced is not None and replaced.secret == "secret-b2"
    assert replaced.created_at == created  # replacing keeps created_at
    assert [r.name for r in one.catalog.list()] == ["peer-a", "peer-b"]
    assert [a.name for a in two.catalog.addresses().list()] == ["peer-a", "peer-b"]
    assert two.catalog.addresses().get("PEER-A") is not None
    assert one.catalog.remove("peer-a") is True and one.catalog.remove("peer-a") is False
    assert two.catalog.get("peer-a") is None and one.catalog.get("not a name!") is None


def test_an_mtls_peers_address_carries_its_pin_and_a_secret_peers_none(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    pin = "sha256//" + base64.b64encode(bytes(range(32))).decode()
    assert one.catalog.put("peer-m", "https://m.example", "mtls", pin) is True
    assert one.catalog.put("peer-s", "https://s.example", "api_key", "secret-s" * 2) is True
    addresses = two.catalog.addresses()
    assert [(a.name, a.tls_pin) for a in addresses.list()] == [("peer-m", pin),
                                                                ("peer-s", None)]
    found = addresses.get("PEER-M")
    assert found is not None and found.tls_pin == pin


def test_a_catalog_change_reaches_a_cached_reader_at_its_next_request(bundles: Bundles) -> None:
    reader, writer = bundles.open(), bundles.open()
    writer.catalog.put("peer-a", "http://a.example", "api_key", "old-secret")

    async def request() -> str | None:
        await reader.request_started()  # what the gateway does first
        record = reader.catalog.get("peer-a")
        return None if record is None else record.secret

    assert run(request()) == "old-secret"
    assert run(request()) == "old-secret"  # cached: nothing changed
    writer.catalog.put("peer-a", "http://a.example", "api_key", "new-secret")
    assert run(request()) == "new-secret"
    writer.catalog.remove("peer-a")
    assert run(request()) is None


def test_a_peers_rate_limit_override_is_kept_by_put_and_seen_at_the_next_request(
    bundles: Bundles,
) -> None:
    reader, writer = bundles.open(), bundles.open()
    writer.catalog.put("peer-a", "http://a.example", "api_key", "secret-a")

    async def limit() -> float | None:
        await reader.request_started()
        record = reader.catalog.get("peer-a")
        assert record is not None
        return record.rate_limit

    assert run(limit()) is None
    assert writer.catalog.set_rate_limit("PEER-A", 2.5) is True
    assert run(limit()) == 2.5
    writer.catalog.put("peer-a", "http://a2.example", "api_key", "secret-a2")
    assert run(limit()) == 2.5  # replacing the credential keeps the override
    assert writer.catalog.set_rate_limit("peer-a", None) is True
    assert run(limit()) is None
    assert writer.catalog.set_rate_limit("nobody", 1.0) is False
    with pytest.raises(ValueError, match="rate limit"):
        writer.catalog.set_rate_limit("peer-a", -1.0)


def test_secrets_are_encrypted_and_read_with_any_listed_key_then_rekeyed(
    bundles: Bundles,
) -> None:
    old = bundles.key
    bundles.open().catalog.put("peer-a", "http://a.example", "api_key", "secret-a")
    new = Fernet.generate_key().decode()
    rotated = bundles.open(f"{new},{old}")  # newest first
    record = rotated.catalog.get("peer-a")
    assert record is not None and record.secret == "secret-a"
    assert rotated.catalog.rekey() == 1
    only_new = bundles.open(new)
    found = only_new.catalog.get("peer-a")
    assert found is not None and found.secret == "secret-a"
    with pytest.raises(SecretUnreadable, match="peer 'peer-a'"):
        bundles.open(old).catalog.get("peer-a")  # the old key alone no longer reads it


def test_rekey_seals_push_config_secrets_again_with_the_newest_key(bundles: Bundles) -> None:
    from synthorg.admin.audit import AuditLog
    from synthorg.admin.service import PeersAdmin
    from synthorg.push.sealing import SealedConfigs, Sealer

    def sealed(stores: Stores) -> SealedConfigs:
        return SealedConfigs(stores.push_configs, Sealer(stores.box))

    old = bundles.key
    first = bundles.open()
    first.catalog.put("peer-a", "http://a.example", "api_key", "secret-a")
    secret = {"id": "c-1", "url": "https://h.example/", "token": "tok-1",
              "authentication": {"schemes": ["Bearer"], "credentials": "cred-1"}}
    run(sealed(first).put("peer-a", "t-1", secret))
    run(sealed(first).put("peer-a", "t-2", {"id": "c-2", "url": "https://h.example/"}))
    # a value stored before sealing existed is sealed by the rekey too
    run(first.push_configs.put("peer-a", "t-3", {"id": "c-3", "url": "https://h.example/",
                                                 "token": "plain-tok"}))
    new = Fernet.generate_key().decode()
    rotated = bundles.open(f"{new},{old}")
    done = PeersAdmin(rotated.catalog, AuditLog(rotated.audit), [], sealed(rotated)).rekey(
        via="cli")
    assert (done.peers, done.push_configs) == (1, 2)  # the config without secrets is left
    only_new = bundles.open(new)
    assert run(sealed(only_new).get("peer-a", "t-1", "c-1")) == secret
    opened = run(sealed(only_new).get("peer-a", "t-3", "c-3"))
    assert opened is not None and opened["token"] == "plain-tok"
    raw = run(only_new.push_configs.get("peer-a", "t-3", "c-3"))
    assert raw is not None and raw["token"] != "plain-tok"  # sealed at rest now
    with pytest.raises(SecretUnreadable):
        run(sealed(bundles.open(old)).get("peer-a", "t-1", "c-1"))


# -- settings -------------------------------------------------------------------------------


def test_settings_write_reset_and_another_handle_sees_the_change(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    assert two.settings.read_all("a2a") == {}
    assert one.settings.write("a2a", "max_message_parts", 5) is None
    assert two.settings.changed_elsewhere() is True
    assert two.settings.read_all("a2a") == {"max_message_parts": 5}
    assert two.settings.changed_elsewhere() is False
    assert one.settings.write("a2a", "max_message_parts", 7) == 5  # the value it replaced
    assert one.settings.reset("a2a", "max_message_parts") == 7
    assert one.settings.reset("a2a", "max_message_parts") is None
    assert two.settings.read_all("a2a") == {}
    assert two.settings.read_all("other") == {}


# -- audit ----------------------------------------------------------------------------------


def test_audit_records_from_every_handle_in_commit_order(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    times = ["2030-01-01T00:00:00.000Z", "2030-01-02T00:00:00.000Z", "2030-01-03T00:00:00.000Z"]
    for i, (stores, ts) in enumerate(zip([one, two, one], times, strict=True)):
        stores.audit.append({"ts": ts, "event": "admin.setting.changed", "via": "cli", "n": i})
    assert [r["n"] for r in two.audit.list()] == [0, 1, 2]
    assert [r["n"] for r in one.audit.list(since="2030-01-02T00:00:00.000Z")] == [1, 2]
    assert [r["n"] for r in one.audit.list(limit=2)] == [1, 2]  # the newest two, oldest first
    assert one.audit.list(since="2031-01-01T00:00:00.000Z") == []


# -- delegations ----------------------------------------------------------------------------


def test_delegations_add_update_and_look_up(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    task = _at("submitted", None)
    record = Delegation("d-1", "peer-a", "r-1", "c-1", "m-1", TASK_STATE_SUBMITTED, "t-origin",
                        task, "2030-01-01T00:00:00.000Z", "2030-01-01T00:00:00.000Z")
    run(one.delegations.add(record))
    assert run(two.delegations.get("d-1")) == record
    assert run(two.delegations.by_origin("t-origin")) == record
    updated = run(two.delegations.update("d-1", _at("completed", None)))
    assert updated.state == TASK_STATE_COMPLETED and updated.task == _at("completed", None)
    assert [d.id for d in run(one.delegations.recent())] == ["d-1"]
    with pytest.raises(LookupError):
        run(one.delegations.update("missing", task))
    assert run(one.delegations.get("missing")) is None


def test_a_delegation_keeps_the_binding_it_was_sent_in(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    task = _at("submitted", None)
    record = Delegation("d-1", "peer-a", "r-1", "c-1", "m-1", TASK_STATE_SUBMITTED, None, task,
                        "2030-01-01T00:00:00.000Z", "2030-01-01T00:00:00.000Z", "HTTP+JSON")
    run(one.delegations.add(record))
    assert run(two.delegations.get("d-1")) == record
    assert run(two.delegations.update("d-1", _at("completed", None))).binding == "HTTP+JSON"


def test_a_peers_binding_is_set_kept_by_put_and_cleared(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    one.catalog.put("peer-a", "http://a.example", "api_key", "secret-a")
    assert two.catalog.get("peer-a").binding is None  # type: ignore[union-attr]
    assert one.catalog.set_binding("peer-a", "HTTP+JSON") is True
    one.catalog.put("peer-a", "http://a2.example", "api_key", "secret-a")
    assert two.catalog.get("peer-a").binding == "HTTP+JSON"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        one.catalog.set_binding("peer-a", "SOAP")
    assert one.catalog.set_binding("nobody", "GRPC") is False
    assert one.catalog.set_binding("peer-a", None) is True
    assert two.catalog.get("peer-a").binding is None  # type: ignore[union-attr]


def _at(state: str, second: int | None) -> V1Task:
    """The remote task in `state` (0.3's name), as the records keep it (1.0's)."""
    status: dict[str, Any] = {"state": state}
    if second is not None:
        status["timestamp"] = f"2030-01-01T00:00:{second:02d}.000Z"
    return task_v1(Task.model_validate({"kind": "task", "id": "r-1", "contextId": "c-1",
                                        "status": status}))


def test_a_delegation_keeps_its_task_as_the_wire_writes_it(bundles: Bundles) -> None:
    """A file part's `bytes` (a Python keyword, so an alias in the model) is stored under
    its wire name, and the task read back is the task written."""
    one, two = bundles.open(), bundles.open()
    stamp = "2030-01-01T00:00:00.000Z"
    run(one.delegations.add(Delegation("d-1", "peer-a", "r-1", "c-1", "m-1", TASK_STATE_SUBMITTED,
                                       None, _at("submitted", 1), stamp, stamp)))
    pushed = task_v1(Task.model_validate({
        "kind": "task", "id": "r-1", "contextId": "c-1", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a-1", "parts": [
            {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain"}}]}],
    }))
    assert run(two.delegations.update("d-1", pushed)).task == pushed
    assert run(one.delegations.get("d-1")).task == pushed  # type: ignore[union-attr]


def test_a_delegation_never_leaves_a_final_state_nor_goes_back_in_time(
    bundles: Bundles,
) -> None:
    one, two = bundles.open(), bundles.open()
    stamp = "2030-01-01T00:00:00.000Z"
    run(one.delegations.add(Delegation("d-1", "peer-a", "r-1", "c-1", "m-1", TASK_STATE_SUBMITTED,
                                       None, _at("submitted", 1), stamp, stamp)))
    assert run(two.delegations.update("d-1", _at("working", 5))).state == TASK_STATE_WORKING
    # an older status arriving late (a retry, a replay, a slow poll) is not taken
    late = run(one.delegations.update("d-1", _at("submitted", 3)))
    assert late.state == TASK_STATE_WORKING and late.task == _at("working", 5)
    waiting = run(two.delegations.update("d-1", _at("input-required", 5)))
    assert waiting.state == TASK_STATE_INPUT_REQUIRED
    assert run(one.delegations.update("d-1", _at("completed", 9))).state == TASK_STATE_COMPLETED
    # final: nothing moves it, newer or without a timestamp
    for task in (_at("working", 10), _at("failed", 11), _at("working", None)):
        kept = run(two.delegations.update("d-1", task))
        assert kept.state == TASK_STATE_COMPLETED and kept.task == _at("completed", 9)
    assert run(one.delegations.get("d-1")).task == _at("completed", 9)  # type: ignore[union-attr]


def test_a_delegation_without_timestamps_still_never_leaves_a_final_state(
    bundles: Bundles,
) -> None:
    one = bundles.open()
    stamp = "2030-01-01T00:00:00.000Z"
    run(one.delegations.add(Delegation("d-1", "peer-a", "r-1", "c-1", "m-1", TASK_STATE_SUBMITTED,
                                       None, _at("submitted", None), stamp, stamp)))
    assert run(one.delegations.update("d-1", _at("working", None))).state == TASK_STATE_WORKING
    assert run(one.delegations.update("d-1", _at("canceled", None))).state == TASK_STATE_CANCELED
    assert run(one.delegations.update("d-1", _at("working", 30))).state == TASK_STATE_CANCELED


def test_a_delegation_is_found_by_its_peer_and_remote_task(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    task = _at("submitted", None)
    for local, peer, when in (("d-old", "peer-a", "2030-01-01"), ("d-new", "peer-a", "2030-01-02"),
                              ("d-other", "peer-b", "2030-01-03")):
        stamp = f"{when}T00:00:00.000Z"
        run(one.delegations.add(Delegation(local, peer, "r-1", "c-1", f"m-{local}",
                                           TASK_STATE_SUBMITTED, None, task, stamp, stamp)))
    found = run(two.delegations.by_remote("peer-a", "r-1"))
    assert found is not None and found.id == "d-new"  # the newest of that peer's
    other = run(two.delegations.by_remote("peer-b", "r-1"))
    assert other is not None and other.id == "d-other"
    assert run(two.delegations.by_remote("peer-c", "r-1")) is None
    assert run(two.delegations.by_remote("peer-a", "r-2")) is None


# -- push notification configs --------------------------------------------------------------


def test_push_configs_are_scoped_to_the_owning_peer_and_bounded(bundles: Bundles) -> None:
    from synthorg.store.push import MAX_CONFIGS_PER_TASK

    one, two = bundles.open(), bundles.open()
    config = {"id": "c-1", "url": "https://hooks.example/a", "token": "tok"}
    assert run(one.push_configs.put("peer-a", "t-1", config))
    assert run(two.push_configs.get("peer-a", "t-1", "c-1")) == config
    assert run(two.push_configs.get("peer-b", "t-1", "c-1")) is None  # another peer's
    replaced = {**config, "url": "https://hooks.example/b"}
    assert run(one.push_configs.put("peer-a", "t-1", replaced))
    assert run(two.push_configs.of_task("peer-a", "t-1")) == [replaced]
    assert run(two.push_configs.of_task("peer-b", "t-1")) == []
    assert [c.config for c in run(two.push_configs.for_task("t-1"))] == [replaced]
    # another peer cannot overwrite it by id
    run(one.push_configs.put("peer-b", "t-1", {**config, "url": "https://evil.example/"}))
    assert run(two.push_configs.get("peer-a", "t-1", "c-1")) == replaced
    for n in range(2, MAX_CONFIGS_PER_TASK + 1):
        assert run(one.push_configs.put("peer-a", "t-1", {**config, "id": f"c-{n:02}"}))
    assert not run(one.push_configs.put("peer-a", "t-1", {**config, "id": "c-extra"}))
    assert run(one.push_configs.put("peer-a", "t-1", {**config, "token": "new"}))  # replace ok
    assert not run(one.push_configs.delete("peer-b", "t-1", "c-1"))
    assert run(two.push_configs.delete("peer-a", "t-1", "c-1"))
    assert run(one.push_configs.get("peer-a", "t-1", "c-1")) is None


def test_push_outbox_enqueues_once_per_status_and_claims_with_a_lease(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    run(one.push_configs.put("peer-a", "t-1", {"id": "c-1", "url": "https://h.example/"}))
    run(one.push_configs.put("peer-a", "t-1", {"id": "c-2", "url": "https://h.example/"}))
    assert run(one.push_outbox.enqueue("t-1", "working@1", 1, '{"v": 1}', 100.0)) == 2
    assert run(two.push_outbox.enqueue("t-1", "working@1", 1, '{"v": 1}', 100.0)) == 0  # again
    assert run(one.push_outbox.enqueue("t-none", "working@1", 1, "{}", 100.0)) == 0  # no config
    claimed = run(one.push_outbox.claim(100.0, 30.0, 10))
    assert sorted(d.config["id"] for d in claimed if d.config) == ["c-1", "c-2"]
    assert {d.peer for d in claimed} == {"peer-a"} and {d.attempts for d in claimed} == {0}
    assert run(two.push_outbox.claim(120.0, 30.0, 10)) == []  # held by the lease
    first, second = claimed
    run(one.push_outbox.delivered(first.id))
    run(one.push_outbox.retry(second.id, 140.0, "HTTP 503"))
    assert run(two.push_outbox.state(first.id)) == ("delivered", 1)
    assert run(two.push_outbox.claim(139.0, 30.0, 10)) == []
    [again] = run(two.push_outbox.claim(140.0, 30.0, 10))
    assert again.id == second.id and again.attempts == 1
    run(two.push_outbox.failed(again.id, "HTTP 400"))
    assert run(one.push_outbox.state(again.id)) == ("failed", 2)
    assert run(one.push_outbox.claim(1000.0, 30.0, 10)) == []
    assert run(one.push_outbox.owners()) == [("peer-a", "t-1")]


def test_push_outbox_prunes_finished_deliveries_in_bounded_batches(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    for n in range(5):
        run(one.push_configs.put("peer-a", "t-1", {"id": f"c-{n}", "url": "https://h.example/"}))
    assert run(one.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0)) == 5
    assert run(two.push_outbox.pending()) == 5
    claimed = run(one.push_outbox.claim(100.0, 30.0, 10))  # held until 130
    for delivery in claimed[:3]:
        run(one.push_outbox.delivered(delivery.id))
    run(one.push_outbox.failed(claimed[3].id, "HTTP 400"))
    run(one.push_outbox.retry(claimed[4].id, 90.0, "HTTP 503"))  # still owed
    assert run(two.push_outbox.pending()) == 1
    assert run(two.push_outbox.prune(130.0, 10)) == 0  # not yet past their last claim
    assert run(two.push_outbox.prune(131.0, 3)) == 3  # bounded
    assert run(one.push_outbox.prune(131.0, 3)) == 1
    assert run(one.push_outbox.prune(10_000.0, 10)) == 0  # the owed one stays
    assert run(two.push_outbox.state(claimed[4].id)) == (None, 1)
    assert all(run(one.push_outbox.state(d.id)) is None for d in claimed[:4])
    # a status pruned is not owed again: a sweep re-reading the task adds nothing
    assert run(two.push_outbox.enqueue("t-1", "working@1", 1, "{}", 200.0)) == 0
    assert run(two.push_outbox.enqueue("t-1", "completed@2", 2, "{}", 200.0)) == 5


def test_push_outbox_never_enqueues_an_older_status_after_a_newer_one(bundles: Bundles) -> None:
    """Two enqueues of one task may overlap: each read the task, at some version, before the
    other wrote. The status read at the older version comes second; it is not owed (pushed
    after the newer one, it would say the task went back), and neither is a repeat of the
    newer one once its delivery was pruned."""
    one, two = bundles.open(), bundles.open()
    for n in range(2):
        run(one.push_configs.put("peer-a", "t-1", {"id": f"c-{n}", "url": "https://h.example/"}))
    assert run(one.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0)) == 2
    assert run(two.push_outbox.enqueue("t-1", "completed@2", 5, "{}", 100.0)) == 2
    assert run(one.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0)) == 0  # read late
    assert run(one.push_outbox.enqueue("t-1", "input-required@3", 3, "{}", 100.0)) == 0
    for delivery in run(one.push_outbox.claim(100.0, 30.0, 10)):
        run(one.push_outbox.delivered(delivery.id))
    assert run(one.push_outbox.prune(1000.0, 10)) == 4
    assert run(two.push_outbox.enqueue("t-1", "working@1", 1, "{}", 2000.0)) == 0
    assert run(two.push_outbox.enqueue("t-1", "completed@2", 5, "{}", 2000.0)) == 0
    assert run(one.push_outbox.pending()) == 0
    run(one.push_configs.put("peer-a", "t-1", {"id": "c-new", "url": "https://h.example/"}))
    # A config set later is owed the status the task has now, once.
    assert run(one.push_outbox.enqueue("t-1", "completed@2", 5, "{}", 2000.0)) == 1
    assert run(two.push_outbox.enqueue("t-1", "completed@2", 5, "{}", 2000.0)) == 0


def test_push_outbox_marks_many_delivered_in_one_write(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    for n in range(3):
        run(one.push_configs.put("peer-a", "t-1", {"id": f"c-{n}", "url": "https://h.example/"}))
    run(one.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0))
    first, second, third = run(one.push_outbox.claim(100.0, 30.0, 10))
    run(one.push_outbox.delivered_many([first.id, third.id]))
    run(one.push_outbox.delivered_many([]))
    assert run(two.push_outbox.state(first.id)) == ("delivered", 1)
    assert run(two.push_outbox.state(third.id)) == ("delivered", 1)
    assert run(two.push_outbox.state(second.id)) == (None, 0)
    assert run(two.push_outbox.pending()) == 1


def test_push_outbox_releases_claims_due_within_the_lease(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    for n in range(3):
        run(one.push_configs.put("peer-a", "t-1", {"id": f"c-{n}", "url": "https://h.example/"}))
    run(one.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0))
    first, second, third = run(one.push_outbox.claim(100.0, 30.0, 10))  # held until 130
    run(one.push_outbox.retry(second.id, 400.0, "HTTP 503"))  # a retry far off: left alone
    run(one.push_outbox.delivered(third.id))
    assert run(two.push_outbox.claim(101.0, 30.0, 10)) == []
    assert run(two.push_outbox.release(101.0, 30.0)) == 1
    assert [d.id for d in run(two.push_outbox.claim(101.0, 30.0, 10))] == [first.id]
    assert run(two.push_outbox.state(third.id)) == ("delivered", 1)


def test_housekeeping_prunes_old_finished_deliveries_and_receipts_out_of_window(
    bundles: Bundles,
) -> None:
    from synthorg.push import housekeeping

    stores = bundles.open()
    run(stores.push_configs.put("peer-a", "t-1", {"id": "c-1", "url": "https://h.example/"}))
    run(stores.push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0))
    [delivery] = run(stores.push_outbox.claim(100.0, 30.0, 10))
    run(stores.push_outbox.delivered(delivery.id))
    run(stores.push_receipts.first("peer-a", "d-old", 100.0, None))
    run(stores.push_receipts.first("peer-a", "d-new", 5000.0, None))
    now = 130.0 + housekeeping.OUTBOX_KEEP + 1
    # freshness off (skew 0): receipts are all that refuse a replay, so none go
    assert run(housekeeping.prune(stores.push_outbox, stores.push_receipts, now, 0)) == (1, 0)
    assert run(stores.push_outbox.state(delivery.id)) is None
    # a 300 s window keeps receipts for twice that
    assert run(housekeeping.prune(stores.push_outbox, stores.push_receipts, now, 300)) == (0, 1)
    assert not run(stores.push_receipts.first("peer-a", "d-new", now, None))


def test_a_sqlite_outbox_from_before_housekeeping_owes_no_status_twice(tmp_path: Path) -> None:
    import sqlite3

    from synthorg.store.sqlite import schema

    data = tmp_path / "data"
    data.mkdir()
    (data / "secret.key").write_text(Fernet.generate_key().decode() + "\n")
    conn = sqlite3.connect(data / "synthorg.db")
    for statements in schema.MIGRATIONS[:7]:  # the schema before housekeeping
        for statement in statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 7")
    conn.execute("INSERT INTO push_configs VALUES ('t-1', 'c-1', 'peer-a', '{}', 'x')")
    for key, at in (("working@1", "2030-01-01"), ("completed@2", "2030-01-02")):
        conn.execute("INSERT INTO push_outbox (id, task_id, config_id, status_key, body, next_at, "
                     "outcome, created_at) VALUES (?, 't-1', 'c-1', ?, '{}', 1.0, 'delivered', ?)",
                     (key, key, at))
    conn.commit()
    conn.close()
    stores = SqliteStores(data)
    try:
        assert run(stores.push_outbox.prune(10.0, 10)) == 2
        assert run(stores.push_outbox.enqueue("t-1", "completed@2", 2, "{}", 20.0)) == 0
    finally:
        stores.close()


def test_a_postgresql_outbox_from_before_housekeeping_owes_no_status_twice(
    postgres_database: str,
) -> None:
    import asyncpg

    from synthorg.store.postgres import schema

    async def before_housekeeping() -> None:
        conn = await asyncpg.connect(postgres_database)
        try:
            await conn.execute(schema._CREATE_LEDGER)
            for number, (name, statements) in enumerate(schema.MIGRATIONS[:5], start=1):
                for statement in statements:
                    await conn.execute(statement)
                await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                   number, name)
            await conn.execute(
                "INSERT INTO push_configs VALUES ('t-1', 'c-1', 'peer-a', '{}', 'x')")
            for key, at in (("working@1", "2030-01-01"), ("completed@2", "2030-01-02")):
                await conn.execute(
                    "INSERT INTO push_outbox (id, task_id, config_id, status_key, body, "
                    "next_at, outcome, created_at) "
                    "VALUES ($1, 't-1', 'c-1', $1, '{}', 1.0, 'delivered', $2)",
                    key, at)
        finally:
            await conn.close()

    run(before_housekeeping())
    stores = Bundles(Path("unused"), postgres_database).open()  # migrates to the latest
    try:
        assert run(stores.push_outbox.prune(10.0, 10)) == 2
        assert run(stores.push_outbox.enqueue("t-1", "completed@2", 2, "{}", 20.0)) == 0
    finally:
        stores.close()


def test_overlapping_postgresql_enqueues_push_no_status_twice_and_none_out_of_order(
    postgres_database: str,
) -> None:
    """Replicas enqueue at once on PostgreSQL. Two enqueues of one task that read it at
    different versions wait on the same config rows (held here by a third transaction, so
    they are surely both waiting): the newer goes first, and the older, checked again on the
    row the newer left, adds nothing. Eight replicas enqueueing one status at once add one
    delivery per config."""
    import asyncpg

    bundles = Bundles(Path("unused"), postgres_database)
    handles = [bundles.open() for _ in range(8)]
    configs = 3
    for n in range(configs):
        run(handles[0].push_configs.put("peer-a", "t-1",
                                        {"id": f"c-{n}", "url": "https://h.example/"}))

    async def waiting_on_locks(conn: asyncpg.Connection, count: int) -> None:
        for _ in range(1000):  # each check a round trip; bounded, never a blind wait
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'")
            if waiting >= count:
                return
            await asyncio.sleep(0.005)
        raise AssertionError(f"fewer than {count} enqueues waiting on the config rows")

    async def overlapping() -> tuple[int, int]:
        holder = await asyncpg.connect(postgres_database)
        watcher = await asyncpg.connect(postgres_database)
        try:
            hold = holder.transaction()
            await hold.start()
            await holder.execute("SELECT 1 FROM push_configs WHERE task_id = 't-1' FOR UPDATE")
            newer = asyncio.ensure_future(
                handles[1].push_outbox.enqueue("t-1", "completed@2", 2, "{}", 100.0))
            await waiting_on_locks(watcher, 1)
            older = asyncio.ensure_future(
                handles[2].push_outbox.enqueue("t-1", "working@1", 1, "{}", 100.0))
            await waiting_on_locks(watcher, 2)
            await hold.commit()
            return await newer, await older
        finally:
            await holder.close()
            await watcher.close()

    async def at_once(key: str, version: int) -> list[int]:
        return list(await asyncio.gather(*(
            handle.push_outbox.enqueue("t-1", key, version, "{}", 100.0) for handle in handles
        )))

    try:
        assert run(overlapping()) == (configs, 0)
        assert sum(run(at_once("canceled@3", 3))) == configs
        assert sum(run(at_once("canceled@3", 3))) == 0
        assert run(handles[0].push_outbox.pending()) == 2 * configs
    finally:
        bundles.close()


def test_push_receipts_are_pruned_by_age_in_bounded_batches(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    for n in range(5):
        assert run(one.push_receipts.first("peer-a", f"d-{n}", 100.0 + n, None))
    assert run(two.push_receipts.prune(103.0, 2)) == 2
    assert run(two.push_receipts.prune(103.0, 2)) == 1
    assert run(one.push_receipts.prune(103.0, 2)) == 0
    assert run(one.push_receipts.first("peer-a", "d-0", 200.0, None))  # forgotten
    assert not run(one.push_receipts.first("peer-a", "d-4", 200.0, None))  # kept


def test_push_receipts_refuse_a_delivery_id_seen_before(bundles: Bundles) -> None:
    one, two = bundles.open(), bundles.open()
    assert run(one.push_receipts.first("peer-a", "d-1", 100.0, None))
    assert not run(two.push_receipts.first("peer-a", "d-1", 101.0, None))
    assert run(two.push_receipts.first("peer-b", "d-1", 101.0, None))  # per peer
    # receipts older than the window are forgotten
    assert run(one.push_receipts.first("peer-a", "d-1", 500.0, 200.0))


def test_a_task_an_earlier_release_stored_by_field_name_reads_back() -> None:
    """Earlier releases' push receiver stored a pushed task by field names: a file part's
    bytes under `bytes_`. Such a body reads back with its bytes, nothing lost."""
    body = json.dumps({
        "kind": "task", "id": "r-1", "contextId": "c-1", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a-1", "parts": [
            {"kind": "file", "file": {"bytes_": "aGk=", "mimeType": "text/plain"}}]}],
    })
    task = load_task_v03(body)
    part = task.model_dump(by_alias=True, exclude_none=True)["artifacts"][0]["parts"][0]
    assert part["file"] == {"bytes": "aGk=", "mimeType": "text/plain"}
    with pytest.raises(ValidationError):
        load_task_v03(body.replace("aGk=", "").replace('"bytes_": ""', '"other": 1'))
