"""CardDiscovery with a scripted fetch and a manual clock: freshness, revalidation, failures,
the LRU bound, shared fetches and the deadline an inbound request never waits past. Also the
foreign-card projection (PeerCard) and SkillDirectory on top of discovery."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from synthorg.cards.discovery import (
    FAILURE_RETRY_SECONDS,
    CardDiscovery,
    PeerCardStatus,
    probe_peers_async,
)
from synthorg.cards.fetch import Fetched
from synthorg.cards.peer_card import InvalidCard, read_peer_card
from synthorg.generated.models import AgentConfig, SkillsQueryResult
from synthorg.skills import SkillDirectory
from tests.support.peers import Catalog, Peer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def card(name: str, *skills: tuple[str, list[str]], url: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": "x",
        "url": url or f"http://{name}.example/api/v1/a2a/",
        "version": "1",
        "protocolVersion": "0.3.0",
        "capabilities": {},
        "defaultInputModes": [],
        "defaultOutputModes": [],
        "skills": [{"id": sid, "name": sid, "description": "", "tags": tags}
                   for sid, tags in skills],
        "someVendorExtension": {"anything": [1, 2, 3]},
    }


Answer = Fetched | Callable[[], Awaitable[Fetched]]


@dataclass
class ScriptedFetch:
    """Answers per URL; records (url, etag) for every call."""

    answers: dict[str, list[Answer]] = field(default_factory=dict)
    calls: list[tuple[str, str | None]] = field(default_factory=list)

    def script(self, endpoint: str, *answers: Answer) -> None:
        self.answers.setdefault(endpoint + "/.well-known/agent-card.json", []).extend(answers)

    async def __call__(self, url: str, *, timeout: float, etag: str | None = None) -> Fetched:
        self.calls.append((url, etag))
        answer = self.answers[url].pop(0)
        return answer if isinstance(answer, Fetched) else await answer()


def ok(document: Any, etag: str | None = '"v1"', max_age: float = 300) -> Fetched:
    return Fetched(document=document, etag=etag, max_age=max_age)


A = Peer("alpha", "http://alpha.example")
B = Peer("beta", "http://beta.example")
C = Peer("gamma", "http://gamma.example")


def make(
    *peers: Peer, timeout: float = 5.0, entries: int = 512
) -> tuple[CardDiscovery, ScriptedFetch, Clock, dict[str, Any]]:
    fetch, clock = ScriptedFetch(), Clock()
    settings: dict[str, Any] = {"timeout": timeout, "entries": entries}
    discovery = CardDiscovery(
        Catalog(*peers), lambda: float(settings["timeout"]), lambda: int(settings["entries"]),
        clock=clock, fetch=fetch,
    )
    return discovery, fetch, clock, settings


def test_a_fresh_card_is_reused_then_revalidated_with_its_etag() -> None:
    discovery, fetch, clock, _ = make(A)
    fetch.script(A.endpoint, ok(card("alpha", ("translate", ["fr"])), max_age=60),
                 Fetched(not_modified=True, etag='"v1"', max_age=60))

    async def run() -> None:
        first = await discovery.lookup("alpha")
        assert first is not None and first.card is not None
        assert [s.id for s in first.card.skills] == ["translate"]
        clock.now += 59
        assert await discovery.lookup("alpha") == first  # fresh: no request
        assert len(fetch.calls) == 1
        clock.now += 2
        again = await discovery.lookup("alpha")
        assert again == first
        assert fetch.calls[1] == ("http://alpha.example/.well-known/agent-card.json", '"v1"')

    asyncio.run(run())


def test_a_changed_card_replaces_the_old_one() -> None:
    discovery, fetch, clock, _ = make(A)
    fetch.script(A.endpoint, ok(card("alpha", ("a", []))),
                 ok(card("alpha", ("a", []), ("b", [])), etag='"v2"'),
                 Fetched(not_modified=True, max_age=300))

    async def run() -> None:
        await discovery.lookup("alpha")
        clock.now += 301
        changed = await discovery.lookup("alpha")
        assert changed is not None and changed.skill_count == 2
        clock.now += 301
        await discovery.lookup("alpha")
        assert fetch.calls[2][1] == '"v2"'  # revalidated against the new ETag

    asyncio.run(run())


def test_unknown_peer_is_none_and_never_fetched() -> None:
    discovery, fetch, _, _ = make(A)
    assert asyncio.run(discovery.lookup("nobody")) is None
    assert fetch.calls == []


@pytest.mark.parametrize(
    ("fetched", "reason"),
    [
        (Fetched(reason="connect_error", detail="could not connect"), "connect_error"),
        (Fetched(reason="http_status", detail="HTTP 500", http_status=500), "http_status"),
        (Fetched(reason="too_large", detail="big"), "too_large"),
        (ok({"name": "no url or skills"}), "invalid_card"),
        (ok(["not", "an", "object"]), "invalid_card"),
    ],
)
def test_failures_are_recorded_with_their_reason(fetched: Fetched, reason: str) -> None:
    discovery, fetch, clock, _ = make(A)
    fetch.script(A.endpoint, fetched, ok(card("alpha")))

    async def run() -> None:
        status = await discovery.lookup("alpha")
        assert status is not None and status.card is None
        assert status.reason == reason
        assert not status.reachable
        assert status.describe().startswith(f"unreachable: {reason}")
        # Remembered for a while, so a dead peer does not cost every request a timeout...
        clock.now += FAILURE_RETRY_SECONDS - 1
        assert (await discovery.lookup("alpha")) == status
        assert len(fetch.calls) == 1
        # ...then tried again.
        clock.now += 2
        back = await discovery.lookup("alpha")
        assert back is not None and back.reachable

    asyncio.run(run())


def test_a_304_without_a_held_card_is_not_a_card() -> None:
    discovery, fetch, _, _ = make(A)
    fetch.script(A.endpoint, Fetched(not_modified=True))
    status = asyncio.run(discovery.lookup("alpha"))
    assert status is not None and status.card is None


def test_a_moved_peer_is_fetched_from_its_new_endpoint() -> None:
    discovery, fetch, _, _ = make(A)
    fetch.script(A.endpoint, ok(card("alpha")))
    fetch.script("http://new.example", ok(card("alpha", ("moved", []))))
    catalog = Catalog(A)

    async def run() -> None:
        discovery._peers = catalog  # the operator edits the catalog
        await discovery.lookup("alpha")
        catalog.peers["alpha"] = Peer("alpha", "http://new.example")
        moved = await discovery.lookup("alpha")
        assert moved is not None and moved.card is not None
        assert moved.card.skills[0].id == "moved"

    asyncio.run(run())


def test_lowering_the_bound_evicts_at_once_and_the_setting_is_read_live() -> None:
    discovery, fetch, _, settings = make(A, B, C, entries=3)
    for peer in (A, B, C):
        fetch.script(peer.endpoint, ok(card(peer.name)))

    async def run() -> None:
        await discovery.lookup_all()
        assert len(discovery.cache) == 3
        discovery.resize(1)
        assert len(discovery.cache) == 1
        discovery.resize(3)
        settings["entries"] = 2  # a runtime settings write, seen on the next lookup
        fetch.script(A.endpoint, ok(card("alpha")))
        fetch.script(B.endpoint, ok(card("beta")))
        await discovery.lookup("alpha")
        assert discovery.cache.max_entries == 2
        assert len(discovery.cache) <= 2

    asyncio.run(run())


def test_concurrent_lookups_share_one_fetch() -> None:
    discovery, fetch, _, _ = make(A)

    async def run() -> None:
        release = asyncio.Event()

        async def slow() -> Fetched:
            await release.wait()
            return ok(card("alpha"))

        fetch.script(A.endpoint, slow)
        waiting = [asyncio.create_task(discovery.lookup("alpha")) for _ in range(5)]
        await asyncio.sleep(0)
        release.set()
        results = await asyncio.gather(*waiting)
        assert len(fetch.calls) == 1
        assert all(r is not None and r.reachable for r in results)

    asyncio.run(run())


def test_an_inbound_lookup_never_waits_past_the_timeout() -> None:
    """A peer that never answers costs one timeout; the fetch goes on and fills the cache."""
    discovery, fetch, _, _ = make(A, B, timeout=0.2)

    async def run() -> None:
        release = asyncio.Event()

        async def hung() -> Fetched:
            await release.wait()
            return ok(card("alpha", ("late", [])))

        fetch.script(A.endpoint, hung)
        fetch.script(B.endpoint, ok(card("beta", ("quick", []))))
        started = time.monotonic()
        statuses = {s.peer: s for s in await discovery.lookup_all()}
        assert time.monotonic() - started < 2.0
        assert statuses["alpha"].reason == "timeout"
        assert statuses["beta"].reachable
        release.set()
        for _ in range(10):  # let the background fetch finish
            await asyncio.sleep(0)
        late = discovery.cached("alpha")
        assert late is not None and late.card is not None
        assert late.card.skills[0].id == "late"

    asyncio.run(run())


def test_probe_peers_reports_each_peer_in_order() -> None:
    peers = [Peer("p1", "http://127.0.0.1:9"), Peer("p0", "not a url")]
    statuses = asyncio.run(probe_peers_async(peers, timeout=2.0))
    assert [s.peer for s in statuses] == ["p1", "p0"]
    assert [s.reachable for s in statuses] == [False, False]
    assert statuses[0].to_json()["status"] == "unreachable"


# -- foreign cards: projection, then strict validation ------------------------------------------


def test_foreign_members_are_ignored_and_not_kept() -> None:
    document = card("alpha", ("translate", ["fr"]))
    document["skills"][0]["vendorField"] = {"x": 1}
    document["additionalInterfaces"] = [{"transport": "GRPC", "url": "grpc://x"}]
    peer = read_peer_card(document)
    assert peer.name == "alpha"
    assert peer.skills[0].tags == ["fr"]
    dumped = peer.model_dump()
    assert "someVendorExtension" not in dumped
    assert "vendorField" not in str(dumped)


def test_the_capabilities_a_follower_reads_are_kept_and_bad_ones_left_out() -> None:
    document = card("alpha")
    document["capabilities"] = {"streaming": True, "pushNotifications": "yes",
                                "vendorCapability": True}
    peer = read_peer_card(document)
    assert peer.capabilities is not None
    assert peer.capabilities.streaming is True
    assert peer.capabilities.pushNotifications is None  # not a boolean: left out
    assert read_peer_card({**document, "capabilities": "all"}).capabilities is None
    bare = {key: value for key, value in card("alpha").items() if key != "capabilities"}
    assert read_peer_card(bare).capabilities is None


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"url": None}, "url"),
        ({"url": "ftp://x.example/"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({"skills": "translate"}, "skills"),
        ({"skills": [{"name": "no id"}]}, "skills.0.id"),
        ({"skills": ["translate"]}, "skills.0"),
        ({"skills": [{"id": "x", "tags": "fr"}]}, "skills.0.tags"),
        ({"name": 7}, "name"),
        ({"version": None}, "version"),
    ],
)
def test_members_we_use_are_validated_strictly(change: dict[str, Any], where: str) -> None:
    document = {**card("alpha", ("translate", [])), **change}
    if change.get("url", "") is None:
        del document["url"]
    with pytest.raises(InvalidCard) as caught:
        read_peer_card(document)
    assert str(caught.value).startswith(f"{where}:")


def test_invalid_card_messages_never_echo_the_value() -> None:
    with pytest.raises(InvalidCard) as caught:
        read_peer_card({**card("alpha"), "url": "gopher://secret-looking-value"})
    assert "secret-looking-value" not in str(caught.value)


# -- SkillDirectory on discovery ----------------------------------------------------------------


class FixedCards:
    def __init__(self, *statuses: PeerCardStatus) -> None:
        self.statuses = {s.peer: s for s in statuses}

    async def lookup(self, name: str) -> PeerCardStatus | None:
        return self.statuses.get(name)

    async def lookup_all(self) -> list[PeerCardStatus]:
        return list(self.statuses.values())


def status(name: str, *skills: tuple[str, list[str]]) -> PeerCardStatus:
    return PeerCardStatus(name, f"http://{name}.example", read_peer_card(card(name, *skills)))


def directory() -> SkillDirectory:
    agents = [
        AgentConfig.model_validate({"id": "zed", "name": "Z",
                                    "skills": [{"id": "Translate", "name": "T"}]}),
        AgentConfig.model_validate({"id": "amy", "name": "A",
                                    "skills": [{"id": "write", "name": "W", "tags": ["FR"]}]}),
        AgentConfig.model_validate({"id": "bob", "name": "B"}),
    ]
    cards = FixedCards(
        status("zeta", ("translate", [])),
        status("alpha", ("localise", ["fr", "Translate"])),
        status("mute", ("other", [])),
        PeerCardStatus("down", "http://down.example", None, "connect_error", "could not connect"),
    )
    return SkillDirectory(agents, cards)


def found(result: SkillsQueryResult) -> tuple[list[str], list[str]]:
    return result.agents, result.peers


def test_query_matches_ids_and_tags_case_insensitively_sorted() -> None:
    skills = directory()
    assert found(asyncio.run(skills.query("TRANSLATE"))) == (["zed"], ["alpha", "zeta"])
    assert found(asyncio.run(skills.query("fr"))) == (["amy"], ["alpha"])
    assert found(asyncio.run(skills.query("nothing"))) == ([], [])


def test_negotiate_answers_from_the_peers_card() -> None:
    result = asyncio.run(directory().negotiate("translate", "alpha"))
    assert result.accepted is True
    assert result.matchedSkills == ["localise"]
    assert result.url == "http://alpha.example/api/v1/a2a/"
    declined = asyncio.run(directory().negotiate("cooking", "zeta"))
    assert declined.accepted is False and declined.matchedSkills == []


def test_negotiate_answers_a_name_not_in_the_catalog_as_a_skill_not_offered() -> None:
    # A caller must not learn whom this node federates with: an unknown name, a peer whose
    # card is unreachable and a peer that does not offer the skill read the same.
    answers = [asyncio.run(directory().negotiate("cooking", name))
               for name in ("nobody", "down", "alpha")]
    assert [a.model_dump(exclude={"peerName"}) for a in answers] == [
        {"skill": "cooking", "accepted": False, "url": "", "matchedSkills": []}] * 3
    assert [a.peerName for a in answers] == ["nobody", "down", "alpha"]
