"""`synthorg-a2a card`: render this node's cards, fetch a URL's or a catalog peer's, validate
each against the spec, print it readably or as JSON, with the documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from synthorg.cards.validation import spec_issues
from synthorg.cli.main import main
from tests.support.catalog import add_peer
from tests.support.node import NodeProcess
from tests.unit.test_cards_projection import CANARIES, COMPANY_YAML

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text(COMPANY_YAML)
    return tmp_path


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """The `card` command in process, through the `synthorg-a2a` entry point itself."""
    monkeypatch.delenv("SYNTHORG_BACKEND_HOST", raising=False)
    monkeypatch.delenv("SYNTHORG_BACKEND_PORT", raising=False)

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = main(["card", *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


class Server:
    """Serves one fixed document as the card at any path."""

    def __init__(self, document: Any) -> None:
        body = json.dumps(document).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Any], Server]]:
    started: list[Server] = []

    def make(document: Any) -> Server:
        started.append(Server(document))
        return started[-1]

    yield make
    for server in started:
        server.close()


# -- local rendering ----------------------------------------------------------------------------


def test_company_card_is_rendered_readably(run: Run, data_dir: Path) -> None:
    code, out, _ = run("--data-dir", str(data_dir))
    assert code == 0
    assert out.splitlines()[0] == "Acme Research"
    assert "http://127.0.0.1:8000/api/v1/a2a/" in out
    assert "translate" in out and "summarize" in out
    assert "X-A2A-Peer-Name + X-API-Key" in out
    assert "spec: valid AgentCard (A2A 0.3.0)" in out
    for canary in CANARIES.values():
        assert str(canary) not in out


def test_agent_card_as_json(run: Run, data_dir: Path) -> None:
    code, out, err = run("--data-dir", str(data_dir), "--agent", "translator", "--json")
    assert code == 0
    card = json.loads(out)
    assert spec_issues(card) == []
    assert card["url"] == "http://127.0.0.1:8000/api/v1/a2a/agents/translator/"
    assert "valid AgentCard" in err


def test_local_url_follows_public_url_or_the_serve_address(
    run: Run, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNTHORG_BACKEND_PORT", "9100")
    _, out, _ = run("--data-dir", str(data_dir), "--json")
    assert json.loads(out)["url"] == "http://127.0.0.1:9100/api/v1/a2a/"
    config = data_dir / "config.yaml"
    config.write_text(config.read_text() + "  public_url: https://acme.example/node/\n")
    _, out, _ = run("--data-dir", str(data_dir), "--json")
    assert json.loads(out)["url"] == "https://acme.example/node/api/v1/a2a/"


@pytest.mark.parametrize("agent", ["ghost", "Ghost"])
def test_unknown_agent_exits_1(run: Run, data_dir: Path, agent: str) -> None:
    code, out, err = run("--data-dir", str(data_dir), "--agent", agent)
    assert code == 1
    assert out == ""
    assert err.startswith("error: no ")


def test_a_bad_company_yaml_exits_2(run: Run, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agents: [{id: x}]\n")
    code, _, err = run("--data-dir", str(tmp_path))
    assert code == 2
    assert "config.yaml" in err


def test_sources_are_mutually_exclusive(run: Run, data_dir: Path) -> None:
    code, _, err = run("http://x.example", "--agent", "a", "--data-dir", str(data_dir))
    assert code == 2
    assert "not allowed with" in err


# -- fetching -----------------------------------------------------------------------------------


def test_fetch_a_live_nodes_card_by_base_url(run: Run, tmp_path: Path) -> None:
    with NodeProcess(tmp_path, COMPANY_YAML) as node:
        code, out, _ = run(node.url)
        assert code == 0
        assert f"{node.url}/api/v1/a2a/" in out
        code, out, _ = run(node.url + "/.well-known/agents/writer/agent-card.json", "--json")
        assert code == 0
        assert json.loads(out)["name"] == "Writer"


def test_fetch_a_catalog_peers_card(run: Run, tmp_path: Path) -> None:
    with NodeProcess(tmp_path / "peer", COMPANY_YAML) as peer:
        here = tmp_path / "here"
        add_peer(here, "acme", "peer-link-secret", peer.url)
        code, out, _ = run("--peer", "acme", "--data-dir", str(here))
        assert code == 0
        assert "Acme Research" in out
        code, _, err = run("--peer", "nobody", "--data-dir", str(here))
        assert code == 1
        assert "no peer named nobody" in err


def test_a_foreign_card_is_reported_not_strict_but_usable(run: Run, serve: Any) -> None:
    foreign = {"name": "Foreign", "description": "d", "url": "http://f.example/rpc",
               "version": "1", "protocolVersion": "0.3.0", "capabilities": {},
               "defaultInputModes": [], "defaultOutputModes": [], "x-vendor": True,
               "skills": [{"id": "s", "name": "S", "description": "", "tags": []}]}
    code, out, err = run(serve(foreign).url)
    assert code == 1
    assert "Foreign" in out
    assert "NOT a valid AgentCard" in err
    assert "discovery can still read it" in err
    assert "x-vendor" in err


def test_an_unusable_card_says_so(run: Run, serve: Any) -> None:
    code, _, err = run(serve({"name": "x"}).url)
    assert code == 1
    assert "discovery cannot use it either" in err


def test_terminal_control_characters_are_never_printed(run: Run, serve: Any) -> None:
    hostile = {"name": "\x1b]0;owned\x07Evil\x1b[2J", "url": "http://e.example/",
               "skills": [{"id": "\x1b[31mred", "name": "n\rx"}]}
    code, out, err = run(serve(hostile).url)
    assert code == 1
    assert "\x1b" not in out + err and "\x07" not in out + err and "\r" not in out


@pytest.mark.parametrize("url", ["ftp://x.example/", "http://user:pw@x.example/", "nonsense"])
def test_bad_urls_exit_2(run: Run, url: str) -> None:
    code, _, err = run(url)
    assert code == 2
    assert "pw" not in err


def test_an_unreachable_url_exits_1(run: Run) -> None:
    code, _, err = run("http://127.0.0.1:9", "--timeout", "2")
    assert code == 1
    assert "connect_error" in err


def test_the_installed_command_knows_card(data_dir: Path) -> None:
    """The documented command line, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "synthorg.cli.main", "card", "--data-dir", str(data_dir), "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == "Acme Research"
