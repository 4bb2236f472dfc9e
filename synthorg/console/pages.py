"""The console's pages: each reads and changes the node through the admin operations.

A change is a form POST answered by a redirect to the page it was made on (`?done=` names
one of the fixed notices below, never text from the request); a refusal re-renders the page
with the admin operation's own message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, get_args
from urllib.parse import quote, urlencode

from starlette.responses import Response

from synthorg.admin.token import AdminToken
from synthorg.console.admin_calls import AdminCalls, Answer
from synthorg.console.app import PREFIX, SECURITY_HEADERS, Console, Request
from synthorg.console.charts import line_chart
from synthorg.generated import constants as spec
from synthorg.generated.constants import HEALTH_STATUS_UNAVAILABLE, TASK_DIRECTION_OUTBOUND
from synthorg.generated.models import AuditEvent, TaskState
from synthorg.store.console_sessions import ConsoleSessionStore

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
NOTICES = {
    "peer-added": "Peer added.",
    "peer-rekeyed": "Endpoint and secret replaced.",
    "peer-limited": "Rate limit saved.",
    "peer-removed": "Peer removed.",
    "setting-saved": "Setting saved.",
    "setting-reset": "Setting reset.",
    "task-canceled": "Task canceled.",
}
TASK_FILTERS = ("direction", "peer", "agent", "state", "since", "pageToken")
OUTBOUND_PAGE = 100  # delegations read per page when looking one up (the list's largest)
TASK_STATES: tuple[str, ...] = get_args(TaskState)
AUDIT_FILTERS = ("event", "via", "peer", "key", "since")
AUDIT_EVENTS: tuple[str, ...] = get_args(AuditEvent)
TOP_REASONS = 3  # refusal reasons drawn, the most frequent first


def label(key: str) -> str:
    """`cardCacheMaxEntries` -> `Card cache max entries`."""
    words = _WORD.sub(" ", key).replace("_", " ").lower()
    return words[:1].upper() + words[1:]


def shown(value: Any) -> str:
    """A value as one line of text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(shown(v) for v in value) or "none"
    return "-" if value is None else str(value)


def notice(request: Request) -> str | None:
    return NOTICES.get(request.query().get("done", ""))


def redirect(path: str, done: str) -> Response:
    return Response(status_code=303, headers={
        **SECURITY_HEADERS, "Location": f"{quote(path, safe='/')}?done={done}"})


def build_console(calls: AdminCalls, token: AdminToken, sessions: ConsoleSessionStore,
                  session_minutes: int) -> Console:
    console = Console(calls, token, sessions, session_minutes)
    pages = Pages(console)
    console.page("GET", PREFIX, pages.overview)
    console.page("GET", PREFIX + "/peers", pages.peers)
    console.page("POST", PREFIX + "/peers", pages.add_peer)
    console.page("GET", PREFIX + "/peers/{name}", pages.peer)
    console.page("POST", PREFIX + "/peers/{name}/rekey", pages.rekey_peer)
    console.page("POST", PREFIX + "/peers/{name}/rate-limit", pages.limit_peer)
    console.page("POST", PREFIX + "/peers/{name}/remove", pages.remove_peer)
    console.page("GET", PREFIX + "/tasks", pages.tasks)
    console.page("GET", PREFIX + "/tasks/{id}", pages.task)
    console.page("POST", PREFIX + "/tasks/{id}/cancel", pages.cancel_task)
    console.page("GET", PREFIX + "/tasks/{id}/events", pages.task_events)
    console.page("GET", PREFIX + "/audit", pages.audit)
    console.page("GET", PREFIX + "/settings", pages.settings)
    console.page("POST", PREFIX + "/settings/{name}", pages.save_setting)
    console.page("POST", PREFIX + "/settings/{name}/reset", pages.reset_setting)
    return console


class Pages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def _call(self, request: Request, operation: spec.Operation, **kwargs: Any) -> Answer:
        return await self.console.calls.call(operation, client=request.client, **kwargs)

    def _render(self, template: str, request: Request, status: int = 200,
                **context: Any) -> Response:
        return self.console.render(template, request, status, notice=notice(request), **context)

    def _failed(self, request: Request, answer: Answer) -> Response:
        return self.console.refuse(request, answer.status, answer.message or "Refused.")

    # -- overview ----------------------------------------------------------------------------

    async def overview(self, request: Request, params: Mapping[str, str]) -> Response:
        status = await self._call(request, spec.ADMIN_STATUS)
        ready = await self._call(request, spec.HEALTH_READY)
        samples = await self._call(request, spec.ADMIN_METRICS_SAMPLES)
        facts = [(label(k), shown(v)) for k, v in (status.document or {}).items()]
        readiness = shown((ready.document or {}).get("status", HEALTH_STATUS_UNAVAILABLE))
        rows = (samples.document or {}).get("samples", [])
        minutes = len(rows) * (samples.document or {}).get("intervalSeconds", 10) / 60
        return self._render("overview.html", request, facts=facts, readiness=readiness,
                            charts=_charts(rows), minutes=f"{minutes:.0f}")

    # -- peers -------------------------------------------------------------------------------

    async def peers(self, request: Request, params: Mapping[str, str],
                    error: Answer | None = None, form: Mapping[str, str] | None = None
                    ) -> Response:
        listed = await self._call(request, spec.ADMIN_LIST_PEERS)
        return self._render("peers.html", request, status=error.status if error else 200,
                            peers=(listed.document or {}).get("peers", []),
                            error=error.message if error else None, form=form or {})

    async def add_peer(self, request: Request, params: Mapping[str, str]) -> Response:
        form = request.form
        body = {key: form.get(key, "") for key in ("name", "endpoint", "scheme", "secret")}
        answer = await self._call(request, spec.ADMIN_CREATE_PEER, body=body)
        if not answer.ok:
            shown_again = {k: v for k, v in body.items() if k != "secret"}
            return await self.peers(request, params, answer, shown_again)
        return redirect(f"{PREFIX}/peers/{answer.document['name']}", "peer-added")

    async def peer(self, request: Request, params: Mapping[str, str],
                   error: Answer | None = None) -> Response:
        answer = await self._call(request, spec.ADMIN_PEER_ACTIVITY, params=params)
        if not answer.ok:
            return self._failed(request, answer)
        return self._render("peer.html", request, status=error.status if error else 200,
                            activity=answer.document, error=error.message if error else None)

    async def rekey_peer(self, request: Request, params: Mapping[str, str]) -> Response:
        form = request.form
        body = {key: form.get(key, "") for key in ("endpoint", "scheme", "secret")}
        answer = await self._call(request, spec.ADMIN_REPLACE_PEER, params=params, body=body)
        if not answer.ok:
            return await self.peer(request, params, answer)
        return redirect(f"{PREFIX}/peers/{params['name']}", "peer-rekeyed")

    async def limit_peer(self, request: Request, params: Mapping[str, str]) -> Response:
        text = request.form.get("rateLimit", "").strip()
        body = {"rateLimit": None if text == "" else _json_value(text)}
        answer = await self._call(request, spec.ADMIN_SET_PEER_RATE_LIMIT, params=params,
                                  body=body)
        if not answer.ok:
            return await self.peer(request, params, answer)
        return redirect(f"{PREFIX}/peers/{params['name']}", "peer-limited")

    async def remove_peer(self, request: Request, params: Mapping[str, str]) -> Response:
        answer = await self._call(request, spec.ADMIN_DELETE_PEER, params=params)
        if not answer.ok:
            return self._failed(request, answer)
        return redirect(f"{PREFIX}/peers", "peer-removed")

    # -- tasks -------------------------------------------------------------------------------

    async def tasks(self, request: Request, params: Mapping[str, str]) -> Response:
        asked = request.query()
        query = {key: value for key in TASK_FILTERS
                 if (value := asked.get(key, "").strip())}
        answer = await self._call(request, spec.ADMIN_LIST_TASKS, query=query)
        listed = answer.document if answer.ok else {}
        following = None
        if listed.get("nextPageToken"):
            following = PREFIX + "/tasks?" + urlencode(
                {**query, "pageToken": listed["nextPageToken"]})
        return self._render("tasks.html", request, status=answer.status, listed=listed,
                            filters=query, next_page=following, states=TASK_STATES,
                            error=None if answer.ok else answer.message)

    def _task_query(self, request: Request) -> dict[str, str]:
        peer = request.query().get("peer") or request.form.get("peer")
        return {"peer": peer} if peer else {}

    async def task(self, request: Request, params: Mapping[str, str],
                   error: Answer | None = None) -> Response:
        query = self._task_query(request)
        if request.query().get("direction") == TASK_DIRECTION_OUTBOUND:
            return await self.outbound_task(request, params, query)
        answer = await self._call(request, spec.ADMIN_GET_TASK, params=params, query=query)
        if answer.status == 404:  # not a peer's task: perhaps one this node gave a peer
            return await self.outbound_task(request, params, query)
        if not answer.ok:
            return self._failed(request, answer)
        detail = answer.document
        events = (f"{PREFIX}/tasks/{quote(params['id'], safe='')}/events?"
                  + urlencode({"peer": detail["peer"]}))
        return self._render("task.html", request, status=error.status if error else 200,
                            detail=detail, task=detail["task"], events=events,
                            error=error.message if error else None)

    async def outbound_task(self, request: Request, params: Mapping[str, str],
                            query: Mapping[str, str]) -> Response:
        """A task this node gave a peer: its delegation record, found in the outbound list
        (the admin API reads one only there), newest first, page by page."""
        asked = {"direction": TASK_DIRECTION_OUTBOUND, "pageSize": str(OUTBOUND_PAGE), **query}
        while True:
            answer = await self._call(request, spec.ADMIN_LIST_TASKS, query=asked)
            if not answer.ok:
                return self._failed(request, answer)
            listed = answer.document
            found = next((d for d in listed["delegations"] if d["id"] == params["id"]), None)
            if found is not None:
                return self._render("outbound.html", request, delegation=found)
            if not listed.get("nextPageToken"):
                return self.console.refuse(request, 404, "No such task of this node's, "
                                           "inbound or outbound.")
            asked = {**asked, "pageToken": listed["nextPageToken"]}

    async def cancel_task(self, request: Request, params: Mapping[str, str]) -> Response:
        query = self._task_query(request)
        answer = await self._call(request, spec.ADMIN_CANCEL_TASK, params=params, query=query)
        if not answer.ok:
            if answer.status == 404:
                return self._failed(request, answer)
            return await self.task(request, params, answer)
        return Response(status_code=303, headers={
            **SECURITY_HEADERS,
            "Location": f"{PREFIX}/tasks/{quote(params['id'], safe='')}?"
                        + urlencode({**query, "done": "task-canceled"})})

    async def task_events(self, request: Request, params: Mapping[str, str]) -> Response:
        """The admin operation's event stream itself, passed through."""
        return await self.console.calls.respond(
            spec.ADMIN_TASK_EVENTS, client=request.client, params=params,
            query=self._task_query(request))

    # -- audit -------------------------------------------------------------------------------

    async def audit(self, request: Request, params: Mapping[str, str]) -> Response:
        asked = request.query()
        query = {key: value for key in AUDIT_FILTERS if (value := asked.get(key, "").strip())}
        answer = await self._call(request, spec.ADMIN_LIST_AUDIT, query=query)
        records = (answer.document or {}).get("records", []) if answer.ok else []
        return self._render("audit.html", request, status=answer.status, records=records,
                            filters=query, events=AUDIT_EVENTS,
                            error=None if answer.ok else answer.message)

    # -- settings ----------------------------------------------------------------------------

    async def settings(self, request: Request, params: Mapping[str, str],
                       error: Answer | None = None, at: str | None = None) -> Response:
        listed = await self._call(request, spec.ADMIN_LIST_SETTINGS)
        return self._render("settings.html", request, status=error.status if error else 200,
                            settings=(listed.document or {}).get("settings", []),
                            error=error.message if error else None, at=at)

    async def save_setting(self, request: Request, params: Mapping[str, str]) -> Response:
        value = _json_value(request.form.get("value", "").strip())
        answer = await self._call(request, spec.ADMIN_PUT_SETTING, params=params,
                                  body={"value": value})
        if not answer.ok:
            return await self.settings(request, params, answer, params["name"])
        return redirect(f"{PREFIX}/settings", "setting-saved")

    async def reset_setting(self, request: Request, params: Mapping[str, str]) -> Response:
        answer = await self._call(request, spec.ADMIN_RESET_SETTING, params=params)
        if not answer.ok:
            return await self.settings(request, params, answer, params["name"])
        return redirect(f"{PREFIX}/settings", "setting-reset")


def _json_value(text: str) -> Any:
    """What the operator typed, as the JSON value the admin operation judges: a number when it
    reads as one, else the text itself (which the operation refuses with its own message)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else text


def _charts(rows: list[dict[str, Any]]) -> list[Any]:
    if not rows:
        return []
    totals: dict[str, int] = {}
    for row in rows:
        for reason, count in row["refusals"].items():
            totals[reason] = totals.get(reason, 0) + count
    reasons = sorted(totals, key=lambda reason: -totals[reason])[:TOP_REASONS]
    return [
        line_chart("Requests per interval", [("requests", [r["requests"] for r in rows])],
                   "requests"),
        line_chart("Refusals per interval, by reason",
                   [(reason, [r["refusals"].get(reason, 0) for r in rows])
                    for reason in reasons] or [("none", [0 for _ in rows])], "refusals"),
        line_chart("Latency per interval (mean and max)",
                   [("mean", [r["latencyMeanMs"] for r in rows]),
                    ("max", [r["latencyMaxMs"] for r in rows])], "ms"),
    ]
