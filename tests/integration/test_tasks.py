"""DESIGN §5 against a live node: the task lifecycle, ownership, idempotency and limits.

The node runs two agents: `echo` (the default; completes at once) and `parker` (waits in
input-required until canceled), routed by `message.metadata.agentId`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import httpx

from synthorg.generated.models import Task
from tests.integration.conftest import MAX_PARTS
from tests.integration.helpers import (
    INVALID_PARAMS,
    MESSAGE_ID_CONFLICT,
    RPC_PATH,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TERMINAL,
    UNKNOWN_AGENT,
    Json,
    call,
    cancel_task,
    create_task,
    envelope,
    expect_error,
    expect_result,
    get_task,
    message,
    park_task,
    send,
    unique,
    user_message_ids,
)


def follow_up(
    client: httpx.Client, task: Json, *texts: str, message_id: str | None = None
) -> httpx.Response:
    return send(client, message(*(texts or ("more",)), message_id=message_id, task_id=task["id"]))


# -- echo ----------------------------------------------------------------------------------


def test_echo_agent_completes_with_an_artifact_echoing_the_text_parts(
    client_a: httpx.Client,
) -> None:
    msg = message("first line", "second line", message_id=unique())
    msg["parts"].insert(1, {"kind": "data", "data": {"ignored": True}})
    task = expect_result(send(client_a, msg))
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    [artifact] = task["artifacts"]
    assert artifact["parts"] == [{"kind": "text", "text": "first line\nsecond line"}]
    assert task["metadata"]["agentId"] == "echo"


def test_task_result_matches_the_spec_task_shape(client_a: httpx.Client) -> None:
    Task.model_validate(create_task(client_a, "shape check"))


def test_task_history_holds_the_stamped_user_message(client_a: httpx.Client) -> None:
    msg = message("stamp me", message_id=unique())
    task = expect_result(send(client_a, msg))
    [stored] = task["history"]
    assert stored["messageId"] == msg["messageId"]
    assert stored["taskId"] == task["id"] and stored["contextId"] == task["contextId"]


def test_caller_context_id_is_kept(client_a: httpx.Client) -> None:
    context = unique("ctx")
    task = expect_result(send(client_a, message(contextId=context)))
    assert task["contextId"] == context


def test_tasks_get_returns_the_stored_task(client_a: httpx.Client) -> None:
    task = create_task(client_a, "read me back")
    assert expect_result(get_task(client_a, task["id"])) == task


# -- parking, continuation, cancel ---------------------------------------------------------


def test_park_agent_leaves_task_input_required_with_an_agent_message(
    client_a: httpx.Client,
) -> None:
    task = park_task(client_a)
    assert task["metadata"]["agentId"] == "parker"
    assert task["status"]["message"]["role"] == "agent"
    assert [m["role"] for m in task["history"]] == ["user", "agent"]


def test_follow_up_stays_input_required_and_appends_history(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    follow_id = unique()
    updated = expect_result(follow_up(client_a, task, "here is more", message_id=follow_id))
    assert updated["id"] == task["id"]
    assert updated["status"]["state"] == "input-required"
    assert updated["history"][: len(task["history"])] == task["history"]
    assert user_message_ids(updated)[-1] == follow_id
    assert expect_result(get_task(client_a, task["id"]))["history"] == updated["history"]


def test_follow_up_retry_is_idempotent_and_not_appended_twice(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    follow_id = unique()
    first = expect_result(follow_up(client_a, task, "once", message_id=follow_id))
    again = expect_result(follow_up(client_a, task, "once", message_id=follow_id))
    assert again["history"] == first["history"]
    assert user_message_ids(again).count(follow_id) == 1


def test_follow_up_with_another_context_id_is_invalid_params(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    msg = message(task_id=task["id"], contextId=unique("other-ctx"))
    expect_error(send(client_a, msg), code=INVALID_PARAMS, request_id=1)


def test_cancel_parked_task_is_canceled(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    canceled = expect_result(cancel_task(client_a, task["id"]))
    assert canceled["status"]["state"] == "canceled"
    assert expect_result(get_task(client_a, task["id"]))["status"]["state"] == "canceled"


def test_cancel_twice_is_not_cancelable(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    expect_result(cancel_task(client_a, task["id"]))
    expect_error(
        cancel_task(client_a, task["id"], request_id="again"),
        code=TASK_NOT_CANCELABLE,
        request_id="again",
    )


def test_cancel_completed_task_is_not_cancelable(client_a: httpx.Client) -> None:
    task = create_task(client_a, "done already")
    expect_error(cancel_task(client_a, task["id"]), code=TASK_NOT_CANCELABLE, request_id=1)
    assert expect_result(get_task(client_a, task["id"]))["status"]["state"] == "completed"


def test_follow_up_on_canceled_task_is_terminal_error(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    expect_result(cancel_task(client_a, task["id"]))
    expect_error(follow_up(client_a, task), code=TASK_TERMINAL, request_id=1)
    assert expect_result(get_task(client_a, task["id"]))["status"]["state"] == "canceled"


def test_follow_up_on_completed_task_is_terminal_error(client_a: httpx.Client) -> None:
    task = create_task(client_a, "complete")
    expect_error(follow_up(client_a, task), code=TASK_TERMINAL, request_id=1)


def test_continuation_of_missing_task_is_task_not_found(client_a: httpx.Client) -> None:
    msg = message(task_id=unique("missing-task"))
    expect_error(send(client_a, msg, "cont"), code=TASK_NOT_FOUND, request_id="cont")


def test_unknown_agent_id_is_unknown_agent(client_a: httpx.Client) -> None:
    msg = message(agent_id="nobody-here")
    expect_error(send(client_a, msg, "agent"), code=UNKNOWN_AGENT, request_id="agent")


def test_tasks_get_missing_task_is_task_not_found(client_a: httpx.Client) -> None:
    expect_error(
        get_task(client_a, unique("missing"), request_id=42), code=TASK_NOT_FOUND, request_id=42
    )


def test_tasks_cancel_missing_task_is_task_not_found(client_a: httpx.Client) -> None:
    expect_error(
        cancel_task(client_a, unique("missing"), request_id=43), code=TASK_NOT_FOUND, request_id=43
    )


# -- historyLength -------------------------------------------------------------------------


def test_tasks_get_history_length_zero_returns_no_history(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    assert "history" not in expect_result(get_task(client_a, task["id"], history_length=0))


def test_tasks_get_history_length_one_returns_the_latest_message(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    got = expect_result(get_task(client_a, task["id"], history_length=1))
    assert got["history"] == task["history"][-1:]
    assert got["status"] == task["status"]


def test_tasks_get_history_length_beyond_history_returns_all(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    assert expect_result(get_task(client_a, task["id"], history_length=50)) == task


def test_tasks_get_large_history_length_is_clamped_not_refused(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    assert expect_result(get_task(client_a, task["id"], history_length=10000)) == task


def test_tasks_get_history_length_does_not_truncate_the_stored_task(
    client_a: httpx.Client,
) -> None:
    task = park_task(client_a)
    expect_result(get_task(client_a, task["id"], history_length=0))
    assert expect_result(get_task(client_a, task["id"]))["history"] == task["history"]


def send_cut(client: httpx.Client, msg: Json, history_length: Any) -> httpx.Response:
    params = {"message": msg, "configuration": {"historyLength": history_length}}
    return call(client, "message/send", params)


def test_message_send_history_length_cuts_the_answer_as_tasks_get_does(
    client_a: httpx.Client,
) -> None:
    """Each follow-up of a parked task adds two messages; the answer to each keeps its
    historyLength's most recent, the same messages tasks/get answers for that length."""
    task = park_task(client_a)
    for turn, length in enumerate((1, 3, 0, 50, 6), start=2):
        answer = expect_result(send_cut(client_a, message("more", task_id=task["id"]), length))
        full = expect_result(get_task(client_a, task["id"]))["history"]
        assert len(full) == 2 * turn
        assert answer.get("history", []) == (full[-length:] if length else [])
        assert answer == expect_result(get_task(client_a, task["id"], history_length=length))
    zero = expect_result(send_cut(client_a, message("more", task_id=task["id"]), 0))
    assert "history" not in zero and zero["status"]["state"] == "input-required"
    whole = expect_result(send(client_a, message("more", task_id=task["id"])))
    assert len(whole["history"]) == 2 * (turn + 2)  # absent: the whole history


def test_message_send_history_length_cuts_a_new_tasks_answer(client_a: httpx.Client) -> None:
    first = expect_result(send_cut(client_a, message("park", agent_id="parker"), 1))
    assert [m["role"] for m in first["history"]] == ["agent"]
    assert len(expect_result(get_task(client_a, first["id"]))["history"]) == 2  # stored whole


def test_message_stream_history_length_cuts_the_streamed_task(client_a: httpx.Client) -> None:
    task = park_task(client_a)
    params = {"message": message("more", task_id=task["id"]),
              "configuration": {"historyLength": 1}}
    with client_a.stream("POST", RPC_PATH, json=envelope("message/stream", params)) as answer:
        lines = [line for line in answer.iter_lines() if line.startswith("data:")]
    events = [json.loads(line[len("data:"):])["result"] for line in lines]
    tasks = [event for event in events if event["kind"] == "task"]
    assert tasks and all(len(t["history"]) == 1 for t in tasks)
    assert tasks[0]["history"] == expect_result(get_task(client_a, task["id"]))["history"][-1:]


def test_message_send_history_length_out_of_bounds_is_invalid_params(
    client_a: httpx.Client,
) -> None:
    for length in (-1, 2**31, "1", 1.5):
        expect_error(send_cut(client_a, message("x"), length), code=INVALID_PARAMS, request_id=1)


# -- ownership -----------------------------------------------------------------------------


def test_other_peers_task_on_get_is_indistinguishable_from_missing(
    client_a: httpx.Client, client_b: httpx.Client
) -> None:
    task = park_task(client_a)
    owned_elsewhere = get_task(client_b, task["id"], request_id="own")
    missing = get_task(client_b, unique("missing"), request_id="own")
    expect_error(owned_elsewhere, code=TASK_NOT_FOUND, request_id="own")
    assert owned_elsewhere.status_code == missing.status_code
    assert owned_elsewhere.content == missing.content


def test_other_peers_task_on_cancel_is_indistinguishable_from_missing(
    client_a: httpx.Client, client_b: httpx.Client
) -> None:
    task = park_task(client_a)
    owned_elsewhere = cancel_task(client_b, task["id"], request_id="own")
    missing = cancel_task(client_b, unique("missing"), request_id="own")
    expect_error(owned_elsewhere, code=TASK_NOT_FOUND, request_id="own")
    assert owned_elsewhere.content == missing.content
    assert expect_result(get_task(client_a, task["id"]))["status"]["state"] == "input-required"


def test_other_peer_cannot_continue_a_task(client_a: httpx.Client, client_b: httpx.Client) -> None:
    task = park_task(client_a)
    expect_error(follow_up(client_b, task), code=TASK_NOT_FOUND, request_id=1)
    assert expect_result(get_task(client_a, task["id"]))["history"] == task["history"]


# -- idempotency ---------------------------------------------------------------------------


def test_same_message_id_and_content_returns_the_same_task(client_a: httpx.Client) -> None:
    msg = message("retry me", message_id=unique())
    first = expect_result(send(client_a, msg))
    again = expect_result(send(client_a, msg, request_id=2), request_id=2)
    assert again == first


def test_retry_with_reordered_keys_is_the_same_content(client_a: httpx.Client) -> None:
    msg = message("reorder me", message_id=unique())
    first = expect_result(send(client_a, msg))
    reordered = dict(reversed(list(msg.items())))
    assert expect_result(send(client_a, reordered))["id"] == first["id"]


def test_retry_laid_out_otherwise_is_the_same_content(client_a: httpx.Client) -> None:
    """The digest is over the message's content, not the request's bytes: other whitespace
    and another request id make the same message."""
    msg = message("lay me out", message_id=unique())
    first = expect_result(send(client_a, msg))
    body = json.dumps(
        envelope("message/send", {"message": msg}, "again"), indent=3
    ).encode()
    again = client_a.post(RPC_PATH, content=body, headers={"Content-Type": "application/json"})
    assert expect_result(again, request_id="again") == first


def test_same_message_id_with_different_content_is_a_conflict(client_a: httpx.Client) -> None:
    message_id = unique()
    expect_result(send(client_a, message("original", message_id=message_id)))
    expect_error(
        send(client_a, message("changed", message_id=message_id), "dup"),
        code=MESSAGE_ID_CONFLICT,
        request_id="dup",
    )


def test_same_message_id_from_another_peer_is_independent(
    client_a: httpx.Client, client_b: httpx.Client
) -> None:
    message_id = unique()
    task_a = expect_result(send(client_a, message("from a", message_id=message_id)))
    task_b = expect_result(send(client_b, message("from b", message_id=message_id)))
    assert task_a["id"] != task_b["id"]
    assert task_b["artifacts"][0]["parts"][0]["text"] == "from b"
    assert expect_result(get_task(client_a, task_a["id"])) == task_a


# -- message limits ------------------------------------------------------------------------


def test_message_over_max_parts_is_invalid_params_with_limit(client_a: httpx.Client) -> None:
    msg = message(*(f"part {i}" for i in range(MAX_PARTS + 1)))
    error = expect_error(send(client_a, msg, "parts"), code=INVALID_PARAMS, request_id="parts")
    assert error["data"]["limit"] == MAX_PARTS


def test_message_at_max_parts_is_accepted(client_a: httpx.Client) -> None:
    task = create_task(client_a, *(f"part {i}" for i in range(MAX_PARTS)))
    assert task["status"]["state"] == "completed"


def test_inbound_message_with_agent_role_is_invalid_params(client_a: httpx.Client) -> None:
    expect_error(
        send(client_a, message(role="agent"), "role"), code=INVALID_PARAMS, request_id="role"
    )


# -- concurrency ---------------------------------------------------------------------------


async def _post_all(base_url: str, headers: httpx.Headers, bodies: list[Json]) -> list[Json]:
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30.0) as client:
        calls: list[Awaitable[httpx.Response]] = [client.post(RPC_PATH, json=b) for b in bodies]
        return [response.json() for response in await asyncio.gather(*calls)]


def concurrently(client: httpx.Client, bodies: list[Json]) -> list[Json]:
    """Send every body at once, each on its own connection; answers in request order."""
    return asyncio.run(_post_all(str(client.base_url), client.headers, bodies))


def follow_up_bodies(task: Json, count: int) -> list[Json]:
    return [
        envelope("message/send", {"message": message(task_id=task["id"])}, i) for i in range(count)
    ]


ROUNDS = 6
BURST = 16


def test_concurrent_retries_of_one_message_create_one_task(client_a: httpx.Client) -> None:
    body = envelope("message/send", {"message": message("once only", message_id=unique())})
    answers = concurrently(client_a, [body] * BURST)
    assert len({answer["result"]["id"] for answer in answers}) == 1


def test_concurrent_reuse_with_different_content_creates_one_task(
    client_a: httpx.Client,
) -> None:
    message_id = unique()
    bodies = [
        envelope("message/send", {"message": message(f"variant {i}", message_id=message_id)})
        for i in range(BURST)
    ]
    answers = concurrently(client_a, bodies)
    assert sum("result" in answer for answer in answers) == 1
    conflicts = [answer["error"]["code"] for answer in answers if "error" in answer]
    assert conflicts == [MESSAGE_ID_CONFLICT] * (BURST - 1)


def test_concurrent_follow_ups_all_land_in_history(client_a: httpx.Client) -> None:
    for _ in range(ROUNDS):
        task = park_task(client_a)
        bodies = follow_up_bodies(task, BURST)
        answers = concurrently(client_a, bodies)
        assert all("result" in answer for answer in answers)
        stored = user_message_ids(expect_result(get_task(client_a, task["id"])))
        acknowledged = [b["params"]["message"]["messageId"] for b in bodies]
        assert set(acknowledged) <= set(stored)


def test_canceled_task_stays_canceled_when_follow_ups_race_the_cancel(
    client_a: httpx.Client,
) -> None:
    for _ in range(ROUNDS):
        task = park_task(client_a)
        bodies: list[Any] = follow_up_bodies(task, BURST)
        bodies.insert(BURST // 2, envelope("tasks/cancel", {"id": task["id"]}, "cancel"))
        answers = concurrently(client_a, bodies)
        cancel = answers[BURST // 2]
        assert cancel["result"]["status"]["state"] == "canceled"
        final = expect_result(get_task(client_a, task["id"]))
        assert final["status"]["state"] == "canceled"
