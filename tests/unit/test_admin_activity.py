"""The admin API's activity operations in process (the node's real app, SQLite): a peer at a
glance, and the traffic samples the console draws."""

from __future__ import annotations

from synthorg.generated.models import MetricsSamples, PeerActivity
from synthorg.observability.activity import SAMPLES
from tests.unit.test_admin_api import PEER, PEER_KEY, PEERS, Admin, admin, expect_error

__all__ = ["admin"]  # the fixture, shared


def test_a_peers_activity_counts_its_refusals_and_reads_its_card(admin: Admin) -> None:
    for key in ("wrong-key-1", "wrong-key-2"):
        refused = admin.request("POST", "/api/v1/a2a/", auth=False, json={},
                                headers={"X-A2A-Peer-Name": PEER, "X-API-Key": key})
        assert refused.status_code == 401
    answer = admin.request("GET", f"{PEERS}/{PEER}/activity")
    assert answer.status_code == 200, answer.text
    activity = PeerActivity.model_validate(answer.json())
    assert activity.refusals == 2 and activity.lastContact is not None
    assert activity.peer.name == PEER and PEER_KEY not in answer.text
    # Nothing listens at the peer's endpoint: the card is unreachable, and says why.
    assert activity.card.status == "unreachable" and activity.card.card is None
    assert activity.card.reason and activity.card.signature == "not_verified"
    assert activity.tasksIn == [] and activity.delegationsOut == []


def test_an_unknown_peers_activity_is_404(admin: Admin) -> None:
    expect_error(admin.request("GET", f"{PEERS}/nobody/activity"), 404, "unknown_peer")
    expect_error(admin.request("GET", f"{PEERS}/nobody/activity", auth=False), 401,
                 "unauthorized")


def test_the_samples_count_requests_and_refusals_by_reason(admin: Admin) -> None:
    admin.request("POST", "/api/v1/a2a/", auth=False, json={})  # no peer name: refused
    answer = admin.request("GET", "/api/v1/admin/metrics/samples")
    samples = MetricsSamples.model_validate(answer.json())
    assert len(samples.samples) == SAMPLES and samples.intervalSeconds == 10
    assert sum(s.requests for s in samples.samples) >= 1
    assert sum(s.refusals.get("missing_peer_name", 0) for s in samples.samples) == 1
    assert [s.at for s in samples.samples] == sorted(s.at for s in samples.samples)
