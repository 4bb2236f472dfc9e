"""The official `a2a-sdk` 0.3.x push sender (`BasePushNotificationSender`) pushing to our
node's receiver: it signs nothing and sends the config's token as X-A2A-Notification-Token,
so it is A2A's own form that our receiver must take, with the credential our node registered
for the delegation, and refuse with any other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore
from a2a.types import PushNotificationConfig, Task, TaskState, TaskStatus

from synthorg.push.signing import push_credential
from tests.integration.live import LiveNode
from tests.integration.test_push_receiver_live import (
    LINK,
    RECEIVED,
    RECEIVER_CONFIG,
    REJECTED,
    SENDER,
    delegated,
)
from tests.support.catalog import add_peer


def sdk_push(url: str, token: str, task: Task) -> None:
    async def run() -> None:
        store = InMemoryPushNotificationConfigStore()
        await store.set_info(task.id, PushNotificationConfig(url=url, token=token))
        async with httpx.AsyncClient(timeout=10) as client:
            await BasePushNotificationSender(client, store).send_notification(task)

    asyncio.run(run())


def test_the_sdks_push_with_the_registered_token_is_taken_and_a_wrong_one_refused(
    tmp_path: Path,
) -> None:
    add_peer(tmp_path, SENDER, LINK)
    delegated(tmp_path, "t-sdk")
    credential = push_credential(LINK, SENDER, "t-sdk")
    done = Task(id="t-sdk", context_id="c-1", status=TaskStatus(
        state=TaskState.completed, timestamp="2030-01-01T00:00:09.000Z"))
    with LiveNode(tmp_path, RECEIVER_CONFIG) as node:
        url = f"{node.url}/api/v1/webhooks/{SENDER}/a2a_push"
        wrong = credential[:-1] + ("1" if credential.endswith("0") else "0")
        sdk_push(url, wrong, done)
        rejected = node.wait_for_event(REJECTED, reason="bad_authorization")
        assert rejected["peer_name"] == SENDER
        assert node.find_event(RECEIVED, task_id="t-sdk") is None
        sdk_push(url, credential, done)
        event = node.wait_for_event(RECEIVED, task_id="t-sdk")
    assert event["delegation_id"] == "d-t-sdk" and event["delegation_state"] == "completed"
    assert not any(credential in line for line in node.lines)
