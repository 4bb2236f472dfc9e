"""Live federation over mutual TLS: two real nodes serving HTTPS on 127.0.0.1, each knowing the
other by the pin of its certificate (`peers add --scheme mtls --cert`), no shared secret.

    node-a  allows node-b, tester   agents: relay (-> node-b/echo); tester: api_key secret
    node-b  allows node-a, node-s   agents: echo; node-s: an api_key peer (a secret)

Certificates come from the test CA script (examples/make_test_ca.py); besides the nodes' own:
`other` (signed by the CA, another key) and `stranger` (self-signed).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from examples.make_test_ca import Issued, issue, make_ca, self_signed, write_node
from synthorg.admin.token import TOKEN_FILENAME
from synthorg.cli.settings_cmd import CA_FILE_ENV
from synthorg.delegation.delegator import Delegator
from synthorg.delegation.errors import PIN_MISMATCH, PeerUnavailable
from synthorg.generated.models import V1TextPart
from synthorg.push.signing import push_credential, signature
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database
from synthorg.store.sqlite.delegations import SqliteDelegationStore
from tests.federation.harness import FedNode, artifact_texts, delegate, running
from tests.support.codes import UNAUTHENTICATED
from tests.support.node import cli

AUTH_FAILED = "a2a.inbound.auth_failed"
TIMEOUT = 10.0
TEXT = [V1TextPart(text="hello")]


class TlsNode(FedNode):
    def __init__(self, root: Path, name: str, allowed: list[str], agents: dict[str, str] | str,
                 certs: Path, cert: str | None = None, *, public: bool = False) -> None:
        """`cert`: the name of the certificate it serves (default: its own name's);
        `public`: its public_url is its https address (its peers push to it there)."""
        super().__init__(root, name, allowed, agents, public=public)
        cert = cert or name
        config = self.data_dir / "config.yaml"
        text = config.read_text().replace("public_url: http://", "public_url: https://")
        config.write_text(text + (
            "server:\n"
            "  tls:\n"
            f"    cert_file: {certs / cert}.pem\n"
            f"    key_file: {certs / cert}.key\n"
            f"    ca_file: {certs / 'ca.pem'}\n"
        ))

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@dataclass
class MtlsFederation:
    a: TlsNode
    b: TlsNode
    certs: Path
    pins: dict[str, str]
    tester_secret: str
    s_secret: str

    def context(self, name: str | None) -> ssl.SSLContext:
        """A client trusting the test CA, showing `name`'s certificate (None: none)."""
        context = ssl.create_default_context(cafile=self.certs / "ca.pem")
        if name is not None:
            context.load_cert_chain(self.certs / f"{name}.pem", self.certs / f"{name}.key")
        return context


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MtlsFederation]:
    root = tmp_path_factory.mktemp("mtls")
    certs = root / "certs"
    certs.mkdir()
    ca = make_ca()
    (certs / "ca.pem").write_bytes(ca.pem)
    issued: dict[str, Issued] = {
        "node-a": issue(ca, "node-a"),
        "node-b": issue(ca, "node-b"),
        "other": issue(ca, "node-a"),  # the CA's, even named node-a, but another key
        "stranger": self_signed("node-a"),
    }
    for name, certificate in issued.items():
        write_node(certs, name, certificate)
    a = TlsNode(root, "node-a", ["node-b", "tester"], {"relay": "node-b/echo"}, certs)
    b = TlsNode(root, "node-b", ["node-a", "node-s"], {"echo": "echo"}, certs)
    with running(a, b):
        for node, peer in ((a, b), (b, a)):
            added = node.cli("peers", "add", peer.name, "--endpoint", peer.url,
                             "--scheme", "mtls", "--cert", str(certs / f"{peer.name}.pem"))
            assert added.returncode == 0, added.stderr
            assert "scheme mtls" in added.stdout
        # node-b's endpoint, but pinning another key: node-a must not talk to it
        wrong = a.cli("peers", "add", "node-b-wrong", "--endpoint", b.url,
                      "--scheme", "mtls", "--cert", str(certs / "other.pem"))
        assert wrong.returncode == 0, wrong.stderr
        tester_secret, s_secret = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        a.add_peer("tester", "https://127.0.0.1:9", tester_secret)
        b.add_peer("node-s", "https://127.0.0.1:9", s_secret)
        yield MtlsFederation(a, b, certs, {n: i.pin for n, i in issued.items()},
                             tester_secret, s_secret)


def send_body(text: str, agent: str = "echo") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {
            "kind": "message", "messageId": secrets.token_hex(8), "role": "user",
            "parts": [{"kind": "text", "text": text}], "metadata": {"agentId": agent},
        }},
    }


def post(fed: MtlsFederation, node: TlsNode, cert: str | None, headers: dict[str, str],
         text: str = "hello") -> httpx.Response:
    with httpx.Client(verify=fed.context(cert), timeout=TIMEOUT) as client:
        return client.post(f"{node.url}/api/v1/a2a/", json=send_body(text), headers=headers)


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == UNAUTHENTICATED


# -- delegation over mTLS ---------------------------------------------------------------------


def test_a_delegates_to_b_over_https_with_its_certificate(mtls: MtlsFederation) -> None:
    code, record = delegate(mtls.a, "node-b", "hello over mtls", "--agent", "echo", "--wait")
    assert code == 0, record
    assert record["peer"] == "node-b" and record["state"] == "completed"
    assert artifact_texts(record["task"]) == ["hello over mtls"]
    seen = mtls.b.cli_json("tasks", "get", record["remote_task_id"])
    assert seen["peer"] == "node-a"  # b knew a by its certificate alone


def test_a_peer_whose_server_certificate_is_not_the_pinned_one_gets_nothing(
        mtls: MtlsFederation) -> None:
    before = len(mtls.b.cli_json("tasks", "list", "--inbound")["inbound"])
    result = mtls.a.cli("delegate", "node-b-wrong", "not for you", "--agent", "echo", "--wait")
    assert result.returncode != 0
    assert "its certificate is not the one its catalog record pins" in result.stderr
    assert len(mtls.b.cli_json("tasks", "list", "--inbound")["inbound"]) == before


def test_a_pooled_connection_is_not_used_once_the_peers_pin_changes(
    mtls: MtlsFederation, tmp_path: Path,
) -> None:
    """node-a's delegator, its pool open as while the node serves: a call after the record's
    pin changed opens a connection of its own, whose certificate fails the new pin."""
    db = open_database(tmp_path)
    catalog = SqliteCatalog(db, SecretBox.for_data_dir(tmp_path))
    delegator = Delegator(catalog, SqliteDelegationStore(db), "node-a", lambda: TIMEOUT,
                          tls=mtls.context("node-a"))

    async def scenario() -> None:
        delegator.pool.open()
        try:
            catalog.put("node-b", mtls.b.url, "mtls", mtls.pins["node-b"])
            record = await delegator.delegate("node-b", TEXT, agent_id="echo")
            assert (await delegator.refresh(record.id)).state == "TASK_STATE_COMPLETED"  # pooled
            catalog.put("node-b", mtls.b.url, "mtls", mtls.pins["other"])
            with pytest.raises(PeerUnavailable, match=PIN_MISMATCH):
                await delegator.refresh(record.id)
            catalog.put("node-b", mtls.b.url, "mtls", mtls.pins["node-b"])
            assert (await delegator.refresh(record.id)).state == "TASK_STATE_COMPLETED"
        finally:
            await delegator.pool.aclose()

    try:
        asyncio.run(scenario())
    finally:
        db.close()


def test_a_node_forwards_to_its_peer_over_mtls(mtls: MtlsFederation) -> None:
    # tester -> node-a (a secret, over HTTPS) -> node-b/echo (node-a's certificate)
    headers = {"X-API-Key": mtls.tester_secret}
    with httpx.Client(verify=mtls.context(None), timeout=TIMEOUT) as client:
        response = client.post(f"{mtls.a.url}/api/v1/a2a/",
                               json=send_body("relayed", "relay"), headers=headers)
    assert response.status_code == 200, response.text
    task = response.json()["result"]
    assert task["status"]["state"] == "completed", task
    assert artifact_texts(task) == ["relayed"]


def test_the_pinned_certificate_alone_is_admitted(mtls: MtlsFederation) -> None:
    response = post(mtls, mtls.b, "node-a", {})
    assert response.status_code == 200, response.text
    assert response.json()["result"]["status"]["state"] == "completed"


def test_the_card_names_the_https_endpoint(mtls: MtlsFederation) -> None:
    with httpx.Client(verify=mtls.context(None), timeout=TIMEOUT) as client:
        card = client.get(f"{mtls.b.url}/.well-known/agent-card.json").json()
    assert card["url"].startswith(f"{mtls.b.url}/")


# -- cards: probed and discovered only from the pinned server certificate ----------------------

PIN_MISMATCH_DETAIL = "its certificate is not the pinned one"


def test_peers_list_probes_an_mtls_peer_at_its_pinned_certificate(mtls: MtlsFederation) -> None:
    # as the node asks: its client certificate shown, the test CA trusted (server.tls)
    rows = {row["name"]: row for row in mtls.a.cli_json("peers", "list")}
    assert rows["node-b"]["card"]["status"] == "ok", rows["node-b"]
    wrong = rows["node-b-wrong"]["card"]  # node-b's endpoint, another CA-signed key pinned
    assert wrong["status"] == "unreachable", wrong
    assert (wrong["reason"], wrong["detail"]) == ("connect_error", PIN_MISMATCH_DETAIL)
    table = mtls.a.cli("peers", "list")
    assert table.returncode == 0, table.stderr
    line = next(row for row in table.stdout.splitlines() if row.startswith("node-b-wrong"))
    assert PIN_MISMATCH_DETAIL in line
    # `card --peer` fetches as the node does too
    shown = mtls.a.cli("card", "--peer", "node-b")
    assert shown.returncode == 0, shown.stderr
    refused = mtls.a.cli("card", "--peer", "node-b-wrong")
    assert refused.returncode != 0 and PIN_MISMATCH_DETAIL in refused.stderr


def test_card_discovery_takes_an_mtls_peers_card_from_its_pinned_certificate_only(
        mtls: MtlsFederation) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "skills/query", "params": {"skill": "echo"}}
    with httpx.Client(verify=mtls.context(None), timeout=TIMEOUT) as client:
        answer = client.post(f"{mtls.a.url}/api/v1/a2a/", json=body,
                             headers={"X-API-Key": mtls.tester_secret})
    assert answer.status_code == 200, answer.text
    assert "node-b-wrong" not in answer.json()["result"]["peers"]
    mtls.a.wait_for_event("a2a.card.fetched", peer_name="node-b")
    refused = mtls.a.wait_for_event("a2a.card.unreachable", peer_name="node-b-wrong")
    assert (refused["reason"], refused["detail"]) == ("connect_error", PIN_MISMATCH_DETAIL)

# -- hostile: every one refused as a wrong secret is -------------------------------------------


def test_a_certificate_of_the_ca_with_another_key_is_refused(mtls: MtlsFederation) -> None:
    assert_refused(post(mtls, mtls.b, "other", {"X-A2A-Peer-Name": "node-a"}))
    mtls.b.wait_for_event(AUTH_FAILED, reason="certificate_mismatch", peer_name="node-a")
    assert_refused(post(mtls, mtls.b, "other", {}))  # it names no one


def test_a_self_signed_certificate_fails_the_handshake(mtls: MtlsFederation) -> None:
    with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
        post(mtls, mtls.b, "stranger", {"X-A2A-Peer-Name": "node-a"})


def test_no_certificate_is_refused(mtls: MtlsFederation) -> None:
    assert_refused(post(mtls, mtls.b, None, {"X-A2A-Peer-Name": "node-a"}))
    mtls.b.wait_for_event(AUTH_FAILED, reason="missing_certificate", peer_name="node-a")
    assert_refused(post(mtls, mtls.b, None, {}))


def test_a_secret_never_admits_an_mtls_peer(mtls: MtlsFederation) -> None:
    pin = mtls.pins["node-a"]
    for headers in ({"X-A2A-Peer-Name": "node-a", "X-API-Key": pin},
                    {"X-A2A-Peer-Name": "node-a", "Authorization": f"Bearer {pin}"},
                    {"X-A2A-Peer-Name": "node-a", "X-API-Key": mtls.s_secret},
                    {"X-API-Key": pin}):
        assert_refused(post(mtls, mtls.b, None, headers))


def test_a_secret_beside_another_peers_certificate_is_refused(mtls: MtlsFederation) -> None:
    # node-s's good secret, on a connection showing node-a's certificate: two identities
    for headers in ({"X-API-Key": mtls.s_secret},
                    {"X-A2A-Peer-Name": "node-s", "X-API-Key": mtls.s_secret}):
        assert_refused(post(mtls, mtls.b, "node-a", headers))
    mtls.b.wait_for_event(AUTH_FAILED, reason="certificate_of_another_peer")
    # named node-a, showing the certificate of the CA with another key, and node-s's secret
    assert_refused(post(mtls, mtls.b, "other",
                        {"X-A2A-Peer-Name": "node-a", "X-API-Key": mtls.s_secret}))
    # the secret peer itself, with no certificate or an unpinned one, is admitted
    for cert in (None, "other"):
        response = post(mtls, mtls.b, cert, {"X-API-Key": mtls.s_secret})
        assert response.status_code == 200, response.text


def test_worker_processes_serve_tls_and_read_the_certificate(mtls: MtlsFederation,
                                                             tmp_path: Path) -> None:
    # each worker builds its own TLS context (uvicorn hands it the factory); every one of
    # them admits node-a by its certificate and refuses it without one
    node = TlsNode(tmp_path, "node-w", ["node-a"], {"echo": "echo"}, mtls.certs, "node-b")
    node.env["SYNTHORG_WORKERS"] = "2"
    with running(node):
        added = node.cli("peers", "add", "node-a", "--endpoint", mtls.a.url,
                         "--scheme", "mtls", "--cert", str(mtls.certs / "node-a.pem"))
        assert added.returncode == 0, added.stderr
        for _ in range(6):  # new connections, spread over the workers' sockets
            response = post(mtls, node, "node-a", {})
            assert response.status_code == 200, response.text
            assert_refused(post(mtls, node, None, {"X-A2A-Peer-Name": "node-a"}))


# -- pushes between mtls peers ----------------------------------------------------------------

SLOW = """\
agents:
  - id: slow
    name: Slow writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {seconds: 1.5, chunks: 3}
"""
PUSH_TIMEOUT = 60.0


def push(fed: MtlsFederation, node: TlsNode, cert: str | None, body: bytes,
         headers: dict[str, str]) -> httpx.Response:
    """A push to `node`'s receiver for node-b's pushes, over a connection showing `cert`."""
    with httpx.Client(verify=fed.context(cert), timeout=TIMEOUT) as client:
        return client.post(f"{node.url}/api/v1/webhooks/node-b/a2a_push", content=body,
                           headers={"Content-Type": "application/json", **headers})


def test_b_pushes_its_task_to_a_over_mtls(mtls: MtlsFederation, tmp_path: Path) -> None:
    # node-a (public_url https) forwards to node-b's slow agent and asks node-b to push: the
    # pushes come over node-b's client certificate, to node-a's pinned server certificate
    a = TlsNode(tmp_path, "node-a", ["tester"], {"fwd": "node-b/slow"}, mtls.certs,
                public=True)
    b = TlsNode(tmp_path, "node-b", ["node-a"], SLOW, mtls.certs)
    with running(a, b):
        for node, peer in ((a, b), (b, a)):
            added = node.cli("peers", "add", peer.name, "--endpoint", peer.url,
                             "--scheme", "mtls", "--cert", str(mtls.certs / f"{peer.name}.pem"))
            assert added.returncode == 0, added.stderr
        a.add_peer("tester", "https://127.0.0.1:9", mtls.tester_secret)
        body = send_body("pushed", "fwd")
        body["params"]["configuration"] = {"blocking": False}
        with httpx.Client(verify=mtls.context(None), timeout=TIMEOUT) as client:
            sent = client.post(f"{a.url}/api/v1/a2a/", json=body,
                               headers={"X-API-Key": mtls.tester_secret})
        assert sent.status_code == 200, sent.text
        task_id = sent.json()["result"]["id"]
        received = a.wait_for_event("a2a.push.received", timeout=PUSH_TIMEOUT,
                                    peer_name="node-b", state="completed")
        assert received["delegation_id"] is not None
        assert received["delegation_state"] == "completed"
        a.wait_for_event("a2a.task.state_changed", timeout=PUSH_TIMEOUT, task_id=task_id,
                         state="completed")
        b.wait_for_event("a2a.push.delivered", delivery_id=received["delivery_id"])
        assert a.events("a2a.push.rejected") == []
        # by push, not by polling: node-a never asked node-b for the task
        asked = [e for e in b.events("a2a.inbound.completed")
                 if e.get("method") in ("tasks/get", "GetTask")]
        assert asked == [], asked
        with httpx.Client(verify=mtls.context(None), timeout=TIMEOUT) as client:
            got = client.post(f"{a.url}/api/v1/a2a/", headers={"X-API-Key": mtls.tester_secret},
                              json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                    "params": {"id": task_id}})
        done = got.json()["result"]
        assert done["status"]["state"] == "completed", done
        assert len(done["artifacts"][0]["parts"]) == 3  # every chunk relayed

        # node-a's receiver, as node-b and as others
        remote = received["task_id"]
        pushed = json.dumps({**done, "id": remote}).encode()
        replay = {"X-A2A-Delivery-Id": received["delivery_id"]}
        assert push(mtls, a, "node-b", pushed, replay).status_code == 409
        fresh = {"X-A2A-Delivery-Id": secrets.token_hex(8)}
        assert push(mtls, a, "node-b", pushed, fresh).status_code == 204, "node-b's own"
        unknown = json.dumps({**done, "id": "not-delegated"}).encode()
        assert push(mtls, a, "node-b", unknown, {}).status_code == 401
        a.wait_for_event("a2a.push.rejected", reason="not_delegated", peer_name="node-b")
        pin = mtls.pins["node-b"]
        credential = push_credential(pin, "node-b", remote)
        stamp, delivery = "1", secrets.token_hex(8)
        forged = {
            "X-A2A-Timestamp": stamp, "X-A2A-Delivery-Id": delivery,
            "X-A2A-Signature": signature(pin, stamp, delivery, "node-b", pushed),
        }
        for cert, headers in ((None, {}), ("other", {}), ("node-a", {}),
                              (None, {"Authorization": f"Bearer {credential}"}),
                              (None, {"X-A2A-Notification-Token": credential}),
                              (None, forged), ("other", forged)):
            response = push(mtls, a, cert, pushed, headers)
            assert response.status_code == 401, (cert, headers, response.text)
        a.wait_for_event("a2a.push.rejected", reason="missing_certificate")
        a.wait_for_event("a2a.push.rejected", reason="certificate_mismatch")


# -- the remote admin CLI to a node serving TLS with a private CA --------------------------------


def test_the_admin_cli_reaches_a_tls_node_trusting_its_private_ca(mtls: MtlsFederation,
                                                                  tmp_path: Path) -> None:
    node, ca = mtls.b, str(mtls.certs / "ca.pem")
    remote = ("--url", node.url, "--token-file", str(node.data_dir / TOKEN_FILENAME))
    elsewhere = tmp_path / "no-data-here"

    def run(*args: str, env: dict[str, str] | None = None) -> Any:
        return cli(elsewhere, *args, check=False, env={CA_FILE_ENV: "", **(env or {})})

    shown = run("status", *remote, "--ca-file", ca, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["store"]["backend"] == "sqlite"
    listed = run("peers", "list", *remote, "--ca-file", ca, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {row["name"] for row in json.loads(listed.stdout)} >= {"node-a", "node-s"}
    by_env = run("settings", "list", *remote, "--json", env={CA_FILE_ENV: ca})
    assert by_env.returncode == 0, by_env.stderr
    # the system's roots alone do not know the private CA; nor does another CA
    untrusted = run("status", *remote)
    assert untrusted.returncode == 3 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr, (
        untrusted.stderr)
    stranger = tmp_path / "stranger-ca.pem"
    stranger.write_bytes(make_ca("another CA").pem)
    assert run("status", *remote, "--ca-file", str(stranger)).returncode == 3
    missing = run("status", *remote, "--ca-file", str(tmp_path / "none.pem"))
    assert missing.returncode == 2 and "--ca-file" in missing.stderr and "no such file" in (
        missing.stderr)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    bad = run("status", *remote, env={CA_FILE_ENV: str(garbage)})
    assert bad.returncode == 2 and CA_FILE_ENV in bad.stderr and "Traceback" not in bad.stderr
