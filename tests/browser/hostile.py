"""What a hostile peer writes: text that would run script or restyle the page if a console
ever treated it as markup. Every payload sets `window.pwned` (or shows a dialog) if it runs."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCRIPT = "<script>window.pwned = 'script'</script>"
IMG = "<img src=x onerror=\"window.pwned = 'onerror'\">"
LINK = "<a href=\"javascript:window.pwned = 'href'\">click</a>"
STYLE = "<style>body { display: none }</style><div style=\"display:none\">x</div>"
SVG = "<svg onload=\"window.pwned = 'svg'\"></svg>"
PAYLOADS = (SCRIPT, IMG, LINK, STYLE, SVG)
ALL = " ".join(PAYLOADS)


def hostile_card(url: str) -> dict[str, Any]:
    return {
        "name": f"Evil {SCRIPT}",
        "description": IMG,
        "url": url,
        "version": STYLE,
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": f"skill-{IMG}", "name": f"Skill {SCRIPT}", "description": LINK,
                    "tags": [SVG, "javascript:alert(1)"]}],
    }


class CardServer:
    """Serves the hostile card at every GET on 127.0.0.1, and `page` (another site's page, as
    an attacker would host it) at /attack."""

    def __init__(self) -> None:
        owner = self
        self.page = ""

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                attack = self.path == "/attack"
                body = owner.page.encode() if attack else json.dumps(
                    hostile_card(owner.url + "/a2a")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if attack else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> CardServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
