"""The console's ASGI app: every path under /console.

Every answer carries a strict Content-Security-Policy (scripts, styles and images from this
node only; no inline script, no other origin, no framing) and `Cache-Control: no-store`. A
page asked for without a live session answers the sign-in form (401). Every POST must carry
the session's CSRF token in the form and, when the browser sends `Origin` or
`Sec-Fetch-Site`, come from this origin; anything else is refused (403) before it is read
further. Pages are Jinja2 templates with autoescaping on, so whatever a peer wrote (task text,
card fields, names, error messages) reaches the browser as text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from synthorg.admin.token import AdminToken
from synthorg.console.admin_calls import AdminCalls
from synthorg.console.sessions import COOKIE, Session, Sessions
from synthorg.errors import StoreError
from synthorg.generated import constants as spec
from synthorg.generated.constants import MEDIA_TYPE_TEXT_PLAIN
from synthorg.http.body import BodyTooLarge, ClientDisconnected, read_body
from synthorg.store.console_sessions import ConsoleSessionStore
from synthorg.web.app import CONSOLE_PREFIX, is_console_path

PREFIX = CONSOLE_PREFIX
MAX_FORM_BYTES = 16 * 1024
MAX_FORM_FIELDS = 32
HERE = Path(__file__).parent
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".svg": "image/svg+xml"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would send `Origin: null` with forms
}


@dataclass
class Request:
    """One console request: the scope, the session (None: not signed in) and the form."""

    scope: Scope
    session: Session | None
    form: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return str(self.scope["path"])

    @property
    def client(self) -> str | None:
        client: Any = self.scope.get("client")
        return str(client[0]) if client else None

    def query(self) -> dict[str, str]:
        raw = self.scope.get("query_string", b"").decode("latin-1")
        return {k: v[0] for k, v in parse_qs(raw, max_num_fields=MAX_FORM_FIELDS).items()}


Page = Callable[[Request, Mapping[str, str]], Awaitable[Response]]


class Console:
    def __init__(self, calls: AdminCalls, token: AdminToken, sessions: ConsoleSessionStore,
                 session_minutes: int) -> None:
        self.calls = calls
        self._token = token
        self.sessions = Sessions(sessions, session_minutes * 60.0)
        self._templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self._static = {p.name: p.read_bytes() for p in (HERE / "static").iterdir()
                        if p.suffix in STATIC_TYPES}
        self._patterns: list[tuple[str, list[str], Page]] = []

    # -- routing -----------------------------------------------------------------------------

    def page(self, method: str, template: str, handler: Page) -> None:
        """Serve `handler` for `method` on `template` (`{name}`: one path segment)."""
        self._patterns.append((method, template.strip("/").split("/"), handler))

    def _route(self, method: str, path: str) -> tuple[Page, dict[str, str]] | None:
        parts = path.strip("/").split("/")
        for want, template, handler in self._patterns:
            if want != method or len(template) != len(parts):
                continue
            params: dict[str, str] = {}
            for expected, got in zip(template, parts, strict=True):
                if expected.startswith("{"):
                    if not got:
                        break
                    params[expected[1:-1]] = got
                elif expected != got:
                    break
            else:
                return handler, params
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method = str(scope.get("method", "GET")).upper()
        if path.startswith(PREFIX + "/static/") and method in ("GET", "HEAD"):
            await self._serve_static(path.removeprefix(PREFIX + "/static/"))(scope, receive, send)
            return
        try:
            response = await self._answer(scope, receive, path, method)
        except StoreError:
            # Sessions live in the store: without it nobody is signed in, and nothing is done.
            response = self.refuse(Request(scope, None), 503, "The node's store cannot be "
                                   "reached just now; try again in a moment.")
        await response(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, path: str, method: str) -> Response:
        session = await self.sessions.get(_cookie(scope))
        request = Request(scope, session)
        if method == "POST":
            refusal = await self._read_form(request, receive)
            if refusal is not None:
                return refusal
        if path.rstrip("/") == PREFIX + "/signin" and method == "POST":
            return await self._sign_in(request)
        if session is None:
            return self.render("signin.html", request, status=401,
                               next=_asked(scope) if method == "GET" else PREFIX)
        if method == "POST" and not session.csrf_matches(request.form.get("csrf")):
            return self.refuse(request, 403, "The form is stale or was not sent by this "
                               "console (CSRF check failed); reload the page and try again.")
        if path.rstrip("/") == PREFIX + "/signout" and method == "POST":
            await self.sessions.close(session.id)
            return _redirect(PREFIX, clear_cookie=True, scope=scope)
        found = self._route(method, path.rstrip("/") or "/")
        if found is None:
            return self.refuse(request, 404, "No such console page.")
        handler, params = found
        return await handler(request, params)

    async def _read_form(self, request: Request, receive: Receive) -> Response | None:
        """The urlencoded form of a POST, or the refusal of one sent from elsewhere."""
        headers = _headers(request.scope)
        site = headers.get("sec-fetch-site")
        origin = headers.get("origin")
        if site is not None and site not in ("same-origin", "none"):
            return self.refuse(request, 403, "Cross-site form posts are refused.")
        if origin is not None and origin != _own_origin(request.scope, headers):
            return self.refuse(request, 403, "Cross-site form posts are refused.")
        kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return self.refuse(request, 415, "Forms are sent urlencoded.")
        try:
            raw = await read_body(receive, MAX_FORM_BYTES)
            fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True,
                              max_num_fields=MAX_FORM_FIELDS, strict_parsing=False)
        except ClientDisconnected:
            return Response(status_code=400)
        except BodyTooLarge:
            return self.refuse(request, 413, "The form is too large.")
        except (UnicodeDecodeError, ValueError):
            return self.refuse(request, 400, "The form is not UTF-8 urlencoded text.")
        request.form = {key: values[0] for key, values in fields.items()}
        return None

    async def _sign_in(self, request: Request) -> Response:
        presented = request.form.get("token", "")
        target = _local_target(request.form.get("next", PREFIX))
        if not presented or not self._token.matches(presented.encode("utf-8", "replace")):
            return self.render("signin.html", request, status=401, next=target,
                               error="That is not the admin token.")
        if request.session is not None:
            await self.sessions.close(request.session.id)
        session = await self.sessions.open()
        return _redirect(target, cookie=session.id, scope=request.scope)

    def _serve_static(self, name: str) -> Response:
        body = self._static.get(name)
        if body is None:
            return Response(b"Not found", 404, headers=SECURITY_HEADERS,
                            media_type=MEDIA_TYPE_TEXT_PLAIN)
        return Response(body, 200, headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
                        media_type=STATIC_TYPES[Path(name).suffix])

    # -- answers -----------------------------------------------------------------------------

    def render(self, template: str, request: Request, status: int = 200,
               **context: Any) -> Response:
        html = self._templates.get_template(template).render(
            session=request.session, path=request.path, prefix=PREFIX, **context)
        return Response(html, status, headers=SECURITY_HEADERS,
                        media_type="text/html; charset=utf-8")

    def refuse(self, request: Request, status: int, message: str) -> Response:
        return self.render("refused.html", request, status=status, message=message)

    async def admin(self, request: Request, operation: spec.Operation, **kwargs: Any) -> Any:
        return await self.calls.call(operation, client=request.client, **kwargs)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1")
            for k, v in scope.get("headers", ())}


def _own_origin(scope: Scope, headers: Mapping[str, str]) -> str:
    scheme = "https" if scope.get("scheme") == "https" else "http"
    return f"{scheme}://{headers.get('host', '')}"


def _cookie(scope: Scope) -> str | None:
    raw = _headers(scope).get("cookie")
    if raw is None:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def _asked(scope: Scope) -> str:
    """The page asked for, with its query (a task page's peer, a list's filters)."""
    query = scope.get("query_string", b"").decode("latin-1")
    return str(scope["path"]) + (f"?{query}" if query else "")


def _local_target(target: str) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    path = target.split("?", 1)[0]
    if is_console_path(path) and "//" not in target and "\\" not in target:
        return target
    return PREFIX


def _redirect(target: str, *, scope: Scope, cookie: str | None = None,
              clear_cookie: bool = False) -> Response:
    response = Response(status_code=303, headers={**SECURITY_HEADERS,
                                                  "Location": quote(target, safe="/?=&%+")})
    secure = scope.get("scheme") == "https"
    if cookie is not None:
        response.set_cookie(COOKIE, cookie, path=PREFIX, httponly=True, samesite="strict",
                            secure=secure)
    if clear_cookie:
        response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict",
                               secure=secure)
    return response
