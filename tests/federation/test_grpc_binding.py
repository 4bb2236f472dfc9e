"""Delegation in the gRPC binding, between two real nodes: node-b serves gRPC
(`server.grpc_port`, its card lists the GRPC interface `127.0.0.1:PORT`), node-a's operator
sets `peers add --binding GRPC` on node-b's record, and every call of a delegation (send,
stream, get, cancel, push config) goes to node-b's A2AService; the CLI says which binding it
used, and a refusal reads back as the same error as over the other bindings.

    node-a  allows node-b   (the operator's node: the CLI runs on its data dir)
    node-b  allows node-a   agents: writer (progress and artifact chunks, about a second),
                            patient (the same, 6 s), slowpoke (a minute), echo
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import httpx

from examples.make_test_ca import issue, make_ca, write_node
from synthorg.cards.fetch import card_url
from tests.federation.harness import FedNode, Pair, artifact_texts, linked_pair

GRPC = "GRPC"
BINDING, SERVES_GRPC = GRPC, True  # the `nodes` fixture's (conftest.py)


def rpcs_from_a(b: FedNode) -> list[str]:
    """The RPCs node-b served node-a over gRPC."""
    return [e["method"] for e in b.events("a2a.inbound.completed")
            if e.get("peer_name") == "node-a" and e["operation"] == "grpc"]


def a2a_from_a(b: FedNode) -> list[str]:
    """Every A2A operation node-b served node-a (the card fetches aside)."""
    return [e["operation"] for e in b.events("a2a.inbound.completed")
            if e.get("peer_name") == "node-a"
            and (e["operation"] == "grpc" or e["operation"].startswith("gateway."))]


def delegated(a: FedNode, *args: str) -> dict[str, Any]:
    result = a.cli("delegate", "node-b", *args, "--json")
    assert result.returncode == 0, result.stderr
    record: dict[str, Any] = json.loads(result.stdout)
    return record


def test_the_card_lists_the_grpc_target(nodes: Pair) -> None:
    a, b = nodes
    assert a.cli_json("peers", "show", "node-b")["binding"] == GRPC
    card = httpx.get(card_url(b.url), timeout=10).json()
    grpc = [i for i in card.get("supportedInterfaces", []) if i["protocolBinding"] == GRPC]
    assert grpc and grpc[0]["url"] == f"127.0.0.1:{b.grpc_port}", card


def test_a_delegation_followed_by_stream_goes_over_grpc(nodes: Pair) -> None:
    a, b = nodes
    record = delegated(a, "write it", "--agent", "writer", "--wait")
    assert record["state"] == "completed" and record["binding"] == GRPC
    assert len(artifact_texts(record["task"])) == 3  # every chunk, appended in order
    assert "SendStreamingMessage" in rpcs_from_a(b)
    assert set(a2a_from_a(b)) == {"grpc"}, a2a_from_a(b)  # nothing over HTTP
    # what the remote task is at node-b, read over gRPC too
    again = a.cli_json("tasks", "get", record["id"], "--refresh")
    assert again["state"] == "completed" and again["binding"] == GRPC
    assert "GetTask" in rpcs_from_a(b)


def test_the_cli_says_it_went_over_grpc(nodes: Pair) -> None:
    a, b = nodes
    shown = a.cli("delegate", "node-b", "hello", "--agent", "echo")
    assert shown.returncode == 0, shown.stderr
    assert "delegated to node-b, agent echo over GRPC" in shown.stdout
    local = re.search(r"local id\s+(\S+)", shown.stdout)
    assert local, shown.stdout
    got = a.cli("tasks", "get", local.group(1))
    assert re.search(r"binding\s+GRPC", got.stdout), got.stdout
    assert "SendMessage" in rpcs_from_a(b)


def test_cancel_goes_over_grpc(nodes: Pair) -> None:
    a, b = nodes
    record = delegated(a, "long", "--agent", "slowpoke")
    assert record["binding"] == GRPC and record["state"] in ("submitted", "working")
    canceled = a.cli("tasks", "cancel", record["id"], "--json")
    assert json.loads(canceled.stdout)["state"] == "canceled", canceled.stderr
    assert a.cli_json("tasks", "get", record["id"])["state"] == "canceled"
    assert "CancelTask" in rpcs_from_a(b)


def test_a_task_followed_later_subscribes_over_grpc(nodes: Pair) -> None:
    a, b = nodes
    record = delegated(a, "later", "--agent", "patient")
    assert record["state"] in ("submitted", "working"), record
    followed = a.cli("tasks", "follow", record["id"], "--json", "--timeout", "60")
    assert followed.returncode == 0, followed.stderr
    done = json.loads(followed.stdout)
    assert done["state"] == "completed" and len(artifact_texts(done["task"])) == 3
    assert "SubscribeToTask" in rpcs_from_a(b)


def test_a_refusal_reads_as_the_same_error_as_over_json_rpc(
    nodes: Pair,
) -> None:
    a, _ = nodes
    refused = a.cli("delegate", "node-b", "anyone?", "--agent", "nobody")
    assert refused.returncode != 0
    # node-b answers NOT_FOUND with google.rpc.Status, ErrorInfo reason UNKNOWN_AGENT: the
    # CLI reads it back as the JSON-RPC error it stands for
    assert "peer node-b refused: -32012" in refused.stderr, refused.stderr
    assert "(gRPC NOT_FOUND)" in refused.stderr


def test_a_wrong_credential_is_refused_clearly(tmp_path: Path) -> None:
    with linked_pair(tmp_path, grpc=True) as (a, b):
        wrong = a.cli("peers", "add", "node-b", "--endpoint", b.url, "--binding", GRPC,
                      stdin="not-the-link-secret-at-all")
        assert wrong.returncode == 0, wrong.stderr
        refused = a.cli("delegate", "node-b", "hello", "--agent", "echo")
        assert refused.returncode != 0
        assert "peer node-b refused: -32003" in refused.stderr, refused.stderr
        assert "(gRPC UNAUTHENTICATED)" in refused.stderr
        assert "not-the-link-secret" not in refused.stderr + refused.stdout


def test_a_node_with_a_public_url_is_pushed_to_after_asking_over_grpc(tmp_path: Path) -> None:
    with linked_pair(tmp_path, GRPC, public=True, grpc=True) as (a, b):
        record = delegated(a, "pushed", "--agent", "writer", "--wait")
        assert record["state"] == "completed" and record["binding"] == GRPC
        assert "CreateTaskPushNotificationConfig" in rpcs_from_a(b), rpcs_from_a(b)
        assert set(a2a_from_a(b)) == {"grpc"}, a2a_from_a(b)


def test_a_peer_without_a_grpc_interface_is_not_called(tmp_path: Path) -> None:
    """Configured for gRPC, a peer whose card lists none: refused before any call, with the
    reason, never sent in another binding instead."""
    with linked_pair(tmp_path, GRPC) as (a, b):  # node-b: no server.grpc_port
        refused = a.cli("delegate", "node-b", "hello", "--agent", "echo")
        assert refused.returncode != 0
        assert "configured for GRPC, but its card lists no A2A 1.0 gRPC interface" in (
            refused.stderr), refused.stderr
        assert a2a_from_a(b) == []


class TlsGrpcNode(FedNode):
    """A node serving HTTPS, and gRPC over TLS, with a certificate of the test CA, whose
    outbound calls trust that CA."""

    def __init__(self, root: Path, name: str, allowed: list[str], agents: dict[str, str] | str,
                 certs: Path, *, public: bool = False, grpc: bool = False) -> None:
        super().__init__(root, name, allowed, agents, public=public, grpc=grpc)
        config = self.data_dir / "config.yaml"
        tls = ("  tls:\n"
               f"    cert_file: {certs / name}.pem\n"
               f"    key_file: {certs / name}.key\n"
               f"    ca_file: {certs / 'ca.pem'}\n")
        text = config.read_text()
        if "server:\n" in text:
            text = text.replace("server:\n", "server:\n" + tls)
        else:
            text += "server:\n" + tls
        config.write_text(text)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def test_over_tls_a_delegation_goes_over_grpcs_and_an_mtls_peer_is_refused_grpc(
    tmp_path: Path,
) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    ca = make_ca()
    (certs / "ca.pem").write_bytes(ca.pem)
    for name in ("node-a", "node-b"):
        write_node(certs, name, issue(ca, name))
    with linked_pair(tmp_path, GRPC, grpc=True,
                     node=functools.partial(TlsGrpcNode, certs=certs)) as (a, b):
        # the card's target `127.0.0.1:PORT` of an https endpoint: TLS, trusting ca_file
        record = delegated(a, "over tls", "--agent", "writer", "--wait")
        assert record["state"] == "completed" and record["binding"] == GRPC
        assert len(artifact_texts(record["task"])) == 3
        assert "SendStreamingMessage" in rpcs_from_a(b)
        assert set(a2a_from_a(b)) == {"grpc"}, a2a_from_a(b)
        # an mtls record: never over gRPC; configured so, refused before any call
        pinned = a.cli("peers", "add", "node-b", "--endpoint", b.url, "--scheme", "mtls",
                       "--cert", str(certs / "node-b.pem"), "--binding", GRPC)
        assert pinned.returncode == 0, pinned.stderr
        served = len(a2a_from_a(b))
        refused = a.cli("delegate", "node-b", "hello", "--agent", "echo")
        assert refused.returncode != 0
        assert "configured for GRPC, but it authenticates by client certificate" in (
            refused.stderr), refused.stderr
        assert len(a2a_from_a(b)) == served


def test_a_peer_down_is_unavailable_and_read_again_once_it_is_back(tmp_path: Path) -> None:
    """Only its card names the gRPC target: while the peer is down a call fails as
    unavailable (what a follower retries), and once it is back the card is read again."""
    with linked_pair(tmp_path, GRPC, grpc=True) as (a, b):
        record = delegated(a, "long", "--agent", "slowpoke")
        assert record["binding"] == GRPC
        b.stop()
        down = a.cli("tasks", "get", record["id"], "--refresh")
        assert down.returncode != 0
        assert "peer node-b unavailable: its card, which names its gRPC target, cannot be read" in (
            down.stderr), down.stderr
        b.restart()
        again = a.cli_json("tasks", "get", record["id"], "--refresh")
        assert again["binding"] == GRPC and again["remote_task_id"] == record["remote_task_id"]
        assert "GetTask" in rpcs_from_a(b)
