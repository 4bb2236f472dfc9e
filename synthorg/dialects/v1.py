"""The A2A 1.0 dialect at the edge: one adapter per 1.0 method, mapping its params (protobuf
JSON mapping: SCREAMING_SNAKE enums, parts without `kind`, results wrapped) to the one
handler of the operation and the answer back. The node keeps a single task model (A2A 0.3's
objects, `a2a.json`), so a task created in one dialect reads the same in the other.

Adding a 1.0 method: add its params and result to `spec/schemas/methods_v1.json`, an
adapter here named after the method in snake case (`SubscribeToTask` -> `subscribe_to_task`),
and run `python -m codegen`; the dispatch table and each adapter's signature are generated
from the spec.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from pydantic import TypeAdapter

import handlers.message_send
import handlers.message_stream
import handlers.tasks_cancel
import handlers.tasks_get
import handlers.tasks_list
import handlers.tasks_pushNotificationConfig_delete
import handlers.tasks_pushNotificationConfig_get
import handlers.tasks_pushNotificationConfig_list
import handlers.tasks_pushNotificationConfig_set
import handlers.tasks_resubscribe
from handlers.context import RpcContext, Sequenced, TaskQuery
from synthorg.dialects.objects import (
    Json,
    as_json,
    copy_members,
    event_v1_json,
    message_to_v1,
    message_v03,
    push_config_v03_json,
    push_config_v1,
    push_config_v1_json,
    state_v03,
    task_v1,
)
from synthorg.errors import UnsupportedOperation
from synthorg.generated.constants import (
    MESSAGE_SEND,
    MESSAGE_STREAM,
    TASKS_CANCEL,
    TASKS_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_DELETE,
    TASKS_PUSH_NOTIFICATION_CONFIG_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_LIST,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET,
    TASKS_RESUBSCRIBE,
    TERMINAL_STATES,
    V1_CANCEL_TASK,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    V1_GET_TASK,
    V1_SEND_MESSAGE,
    V1_SEND_STREAMING_MESSAGE,
    V1_SUBSCRIBE_TO_TASK,
)
from synthorg.generated.models import (
    Message,
    MessageSendConfiguration,
    MessageSendParams,
    MessageStreamParams,
    StreamEvent,
    Task,
    TasksCancelParams,
    TasksGetParams,
    TasksPushNotificationConfigDeleteParams,
    TasksPushNotificationConfigGetParams,
    TasksPushNotificationConfigListParams,
    TasksPushNotificationConfigSetParams,
    TasksResubscribeParams,
    V1CancelTaskParams,
    V1CancelTaskResult,
    V1CreateTaskPushNotificationConfigParams,
    V1CreateTaskPushNotificationConfigResult,
    V1DeleteTaskPushNotificationConfigParams,
    V1DeleteTaskPushNotificationConfigResult,
    V1GetExtendedAgentCardParams,
    V1GetExtendedAgentCardResult,
    V1GetTaskParams,
    V1GetTaskPushNotificationConfigParams,
    V1GetTaskPushNotificationConfigResult,
    V1GetTaskResult,
    V1ListTaskPushNotificationConfigsParams,
    V1ListTaskPushNotificationConfigsResult,
    V1ListTasksParams,
    V1ListTasksResult,
    V1MessagePayload,
    V1SendMessageConfiguration,
    V1SendMessageParams,
    V1SendMessageResult,
    V1SendStreamingMessageParams,
    V1SendStreamingMessageResult,
    V1StreamResponse,
    V1SubscribeToTaskParams,
    V1SubscribeToTaskResult,
    V1TaskPayload,
)

V1STREAM_ADAPTER: TypeAdapter[V1StreamResponse] = TypeAdapter(V1StreamResponse)

# -- the adapters (the dispatch table's 1.0 entries) ---------------------------------------


def _present(**fields: Any) -> Json:
    """The fields that are set: the models refuse an explicit null for an optional field."""
    return {name: value for name, value in fields.items() if value is not None}


def _send_body(method: str, params: V1SendMessageParams | V1SendStreamingMessageParams) -> Json:
    body: Json = {"method": method, "message": message_v03(as_json(params.message))}
    config = params.configuration
    if config is not None:
        body["configuration"] = copy_members(
            config.model_dump(exclude_none=True), {}, "acceptedOutputModes", "historyLength"
        )
        if config.returnImmediately is not None:
            body["configuration"]["blocking"] = not config.returnImmediately
        if config.taskPushNotificationConfig is not None:
            push = config.taskPushNotificationConfig.model_dump(mode="json", exclude_none=True)
            body["configuration"]["pushNotificationConfig"] = push_config_v03_json(push)
    if params.metadata is not None:
        body["metadata"] = params.metadata
    return body


async def send_message(params: V1SendMessageParams, ctx: RpcContext) -> V1SendMessageResult:
    ours = MessageSendParams.model_validate(_send_body(MESSAGE_SEND, params))
    answer = await handlers.message_send.handle(ours, ctx)
    if isinstance(answer, Message):  # the agent's direct reply: no task
        return V1MessagePayload(message=message_to_v1(answer))
    return V1TaskPayload(task=task_v1(answer))


def _event_v1(item: Sequenced[StreamEvent]) -> Sequenced[V1StreamResponse]:
    document = item.event.model_dump(mode="json", by_alias=True, exclude_none=True)
    response: V1StreamResponse = V1STREAM_ADAPTER.validate_python(event_v1_json(document))
    return Sequenced(item.seq, response, quiet=item.quiet)


async def send_streaming_message(
    params: V1SendStreamingMessageParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[V1SendStreamingMessageResult]]:
    ours = MessageStreamParams.model_validate(_send_body(MESSAGE_STREAM, params))
    async for item in handlers.message_stream.handle(ours, ctx):
        yield _event_v1(item)


async def subscribe_to_task(
    params: V1SubscribeToTaskParams, ctx: RpcContext
) -> AsyncIterator[Sequenced[V1SubscribeToTaskResult]]:
    ours = TasksResubscribeParams(method=TASKS_RESUBSCRIBE, id=params.id)
    resuming = ctx.last_event_id is not None
    async for item in handlers.tasks_resubscribe.handle(ours, ctx):
        # 1.0 refuses to follow a task that is already final (0.3 answers it and ends);
        # a resumed stream (Last-Event-ID) still gets the events it missed.
        event = item.event
        if not resuming and isinstance(event, Task) and event.status.state in TERMINAL_STATES:
            raise UnsupportedOperation()
        resuming = True
        yield _event_v1(item)


async def get_task(params: V1GetTaskParams, ctx: RpcContext) -> V1GetTaskResult:
    ours = TasksGetParams.model_validate(
        _present(method=TASKS_GET, id=params.id, historyLength=params.historyLength)
    )
    return task_v1(await handlers.tasks_get.handle(ours, ctx))


async def cancel_task(params: V1CancelTaskParams, ctx: RpcContext) -> V1CancelTaskResult:
    ours = TasksCancelParams.model_validate(
        _present(method=TASKS_CANCEL, id=params.id, metadata=params.metadata)
    )
    return task_v1(await handlers.tasks_cancel.handle(ours, ctx))


DEFAULT_PAGE_SIZE = 50


async def list_tasks(params: V1ListTasksParams, ctx: RpcContext) -> V1ListTasksResult:
    query = TaskQuery(
        context_id=params.contextId,
        state=state_v03(params.status) if params.status is not None else None,
        status_since=params.statusTimestampAfter,
        page_size=params.pageSize or DEFAULT_PAGE_SIZE,
        page_token=params.pageToken or "",
        history_length=params.historyLength,
        include_artifacts=bool(params.includeArtifacts),
    )
    page = await handlers.tasks_list.handle(query, ctx)
    return V1ListTasksResult(
        tasks=[task_v1(task) for task in page.tasks],
        nextPageToken=page.next_page_token,
        pageSize=page.page_size,
        totalSize=page.total_size,
    )


async def get_extended_agent_card(
    params: V1GetExtendedAgentCardParams, ctx: RpcContext
) -> V1GetExtendedAgentCardResult:
    """The card the 0.3 method answers, written with 1.0's members only (and signed as
    that document: the 0.3 document's signature covers other bytes)."""
    return ctx.extended_card_v1()


# -- push notification configs ------------------------------------------------------------


async def create_task_push_notification_config(
    params: V1CreateTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1CreateTaskPushNotificationConfigResult:
    inner = push_config_v03_json(params.model_dump(mode="json", by_alias=True, exclude_none=True))
    ours = TasksPushNotificationConfigSetParams.model_validate({
        "method": TASKS_PUSH_NOTIFICATION_CONFIG_SET, "taskId": params.taskId,
        "pushNotificationConfig": inner,
    })
    return push_config_v1(await handlers.tasks_pushNotificationConfig_set.handle(ours, ctx))


async def get_task_push_notification_config(
    params: V1GetTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1GetTaskPushNotificationConfigResult:
    ours = TasksPushNotificationConfigGetParams(
        method=TASKS_PUSH_NOTIFICATION_CONFIG_GET, id=params.taskId,
        pushNotificationConfigId=params.id,
    )
    return push_config_v1(await handlers.tasks_pushNotificationConfig_get.handle(ours, ctx))


async def list_task_push_notification_configs(
    params: V1ListTaskPushNotificationConfigsParams, ctx: RpcContext
) -> V1ListTaskPushNotificationConfigsResult:
    ours = TasksPushNotificationConfigListParams(
        method=TASKS_PUSH_NOTIFICATION_CONFIG_LIST, id=params.taskId
    )
    configs = await handlers.tasks_pushNotificationConfig_list.handle(ours, ctx)
    # The token is the offset of the next page: a task holds few configs (at most 16).
    start = int(params.pageToken or 0)
    end = start + params.pageSize if params.pageSize is not None else len(configs)
    return V1ListTaskPushNotificationConfigsResult(
        configs=[push_config_v1(config) for config in configs[start:end]],
        nextPageToken=str(end) if end < len(configs) else "",
    )


async def delete_task_push_notification_config(
    params: V1DeleteTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1DeleteTaskPushNotificationConfigResult:
    ours = TasksPushNotificationConfigDeleteParams(
        method=TASKS_PUSH_NOTIFICATION_CONFIG_DELETE, id=params.taskId,
        pushNotificationConfigId=params.id,
    )
    await handlers.tasks_pushNotificationConfig_delete.handle(ours, ctx)
    return None


# -- outbound: this node's calls to a peer that speaks 1.0 ---------------------------------
# The node builds each call as the 0.3 params model; a 1.0 peer gets the same call as the
# 1.0 params model, mapped here. Answers come back through `task_v03_json`/`event_v03_json`:
# a peer's answer is read leniently (members this node does not know are dropped) and the
# 0.3 model validates what is kept.

OutboundParams = (MessageSendParams | MessageStreamParams | TasksGetParams | TasksCancelParams
                  | TasksResubscribeParams | TasksPushNotificationConfigSetParams)
# The 1.0 name of each 0.3 method this node calls.
V1_METHOD_NAMES: Mapping[str, str] = {
    MESSAGE_SEND: V1_SEND_MESSAGE, MESSAGE_STREAM: V1_SEND_STREAMING_MESSAGE,
    TASKS_GET: V1_GET_TASK, TASKS_CANCEL: V1_CANCEL_TASK, TASKS_RESUBSCRIBE: V1_SUBSCRIBE_TO_TASK,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET: V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
}
V1OutboundParams = (V1SendMessageParams | V1SendStreamingMessageParams | V1GetTaskParams
                    | V1CancelTaskParams | V1SubscribeToTaskParams
                    | V1CreateTaskPushNotificationConfigParams)


def _send_configuration_v1(
    config: MessageSendConfiguration | None,
) -> V1SendMessageConfiguration | None:
    if config is None:
        return None
    push = None
    if config.pushNotificationConfig is not None:
        push = push_config_v1_json(
            config.pushNotificationConfig.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True))
    return V1SendMessageConfiguration.model_validate(_present(
        acceptedOutputModes=config.acceptedOutputModes,
        historyLength=config.historyLength,
        returnImmediately=None if config.blocking is None else not config.blocking,
        taskPushNotificationConfig=push,
    ))


def params_v1(params: OutboundParams) -> V1OutboundParams:
    """A call this node makes, as the 1.0 method's params (the same operation)."""
    if isinstance(params, MessageSendParams | MessageStreamParams):
        fields = _present(message=message_to_v1(params.message),
                          configuration=_send_configuration_v1(params.configuration),
                          metadata=params.metadata)
        if isinstance(params, MessageSendParams):
            return V1SendMessageParams(method=V1_SEND_MESSAGE, **fields)
        return V1SendStreamingMessageParams(method=V1_SEND_STREAMING_MESSAGE, **fields)
    if isinstance(params, TasksGetParams):
        return V1GetTaskParams(method=V1_GET_TASK, **_present(
            id=params.id, historyLength=params.historyLength))
    if isinstance(params, TasksCancelParams):
        return V1CancelTaskParams(method=V1_CANCEL_TASK, **_present(
            id=params.id, metadata=params.metadata))
    if isinstance(params, TasksResubscribeParams):
        return V1SubscribeToTaskParams(method=V1_SUBSCRIBE_TO_TASK, id=params.id)
    config = params.pushNotificationConfig.model_dump(mode="json", by_alias=True,
                                                      exclude_none=True)
    return V1CreateTaskPushNotificationConfigParams.model_validate({
        "method": V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG, "taskId": params.taskId,
        **push_config_v1_json(config),
    })
