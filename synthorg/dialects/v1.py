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
from synthorg.errors import UnsupportedOperation
from synthorg.generated.constants import (
    KIND_ARTIFACT_UPDATE,
    KIND_DATA,
    KIND_FILE,
    KIND_MESSAGE,
    KIND_STATUS_UPDATE,
    KIND_TASK,
    KIND_TEXT,
    MESSAGE_SEND,
    MESSAGE_STREAM,
    STATE_UNKNOWN,
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
    TaskPushNotificationConfig,
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
    V1Message,
    V1MessagePayload,
    V1SendMessageConfiguration,
    V1SendMessageParams,
    V1SendMessageResult,
    V1SendStreamingMessageParams,
    V1SendStreamingMessageResult,
    V1StreamResponse,
    V1SubscribeToTaskParams,
    V1SubscribeToTaskResult,
    V1Task,
    V1TaskPayload,
    V1TaskPushNotificationConfig,
)
from synthorg.tasks.events import STREAM_END_STATES

Json = dict[str, Any]
V1STREAM_ADAPTER: TypeAdapter[V1StreamResponse] = TypeAdapter(V1StreamResponse)

# -- enums --------------------------------------------------------------------------------

_STATE_PREFIX = "TASK_STATE_"
_ROLE_PREFIX = "ROLE_"


def state_v1(state: str) -> str:
    """`input-required` -> `TASK_STATE_INPUT_REQUIRED`; `unknown` -> `..._UNSPECIFIED`."""
    if state == STATE_UNKNOWN:
        return f"{_STATE_PREFIX}UNSPECIFIED"
    return _STATE_PREFIX + state.upper().replace("-", "_")


def state_v03(state: str) -> str:
    if state == f"{_STATE_PREFIX}UNSPECIFIED":
        return STATE_UNKNOWN
    return state.removeprefix(_STATE_PREFIX).lower().replace("_", "-")


# -- objects, as JSON (each side's model validates the result) -----------------------------


def _copy(source: Mapping[str, Any], target: Json, *names: str) -> Json:
    for name in names:
        if name in source:
            target[name] = source[name]
    return target


def part_v03(part: Mapping[str, Any]) -> Json:
    if "text" in part:
        return _copy(part, {"kind": KIND_TEXT, "text": part["text"]}, "metadata")
    if "data" in part:
        return _copy(part, {"kind": KIND_DATA, "data": part["data"]}, "metadata")
    file: Json = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
    if "mediaType" in part:
        file["mimeType"] = part["mediaType"]
    if "filename" in part:
        file["name"] = part["filename"]
    return _copy(part, {"kind": KIND_FILE, "file": file}, "metadata")


def part_v1(part: Mapping[str, Any]) -> Json:
    kind = part["kind"]
    if kind == KIND_TEXT:
        return _copy(part, {"text": part["text"]}, "metadata")
    if kind == KIND_DATA:
        return _copy(part, {"data": part["data"]}, "metadata")
    file = part["file"]
    out: Json = {"raw": file["bytes"]} if "bytes" in file else {"url": file["uri"]}
    if "mimeType" in file:
        out["mediaType"] = file["mimeType"]
    if "name" in file:
        out["filename"] = file["name"]
    return _copy(part, out, "metadata")


_MESSAGE_FIELDS = ("contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def message_v03(message: Mapping[str, Any]) -> Json:
    out: Json = {
        "kind": KIND_MESSAGE,
        "messageId": message["messageId"],
        "role": message["role"].removeprefix(_ROLE_PREFIX).lower(),
        "parts": [part_v03(part) for part in message["parts"]],
    }
    return _copy(message, out, *_MESSAGE_FIELDS)


def message_v1(message: Mapping[str, Any]) -> Json:
    out: Json = {
        "messageId": message["messageId"],
        "role": _ROLE_PREFIX + message["role"].upper(),
        "parts": [part_v1(part) for part in message["parts"]],
    }
    return _copy(message, out, *_MESSAGE_FIELDS)


def _artifact(artifact: Mapping[str, Any], part: Any) -> Json:
    out: Json = {"artifactId": artifact["artifactId"]}
    out["parts"] = [part(p) for p in artifact["parts"]]
    return _copy(artifact, out, "name", "description", "metadata", "extensions")


def _status(status: Mapping[str, Any], state: Any, message: Any) -> Json:
    out: Json = {"state": state(status["state"])}
    if "message" in status:
        out["message"] = message(status["message"])
    return _copy(status, out, "timestamp")


def task_v1_json(task: Mapping[str, Any]) -> Json:
    out: Json = {
        "id": task["id"],
        "contextId": task["contextId"],
        "status": _status(task["status"], state_v1, message_v1),
    }
    if "artifacts" in task:
        out["artifacts"] = [_artifact(a, part_v1) for a in task["artifacts"]]
    if "history" in task:
        out["history"] = [message_v1(m) for m in task["history"]]
    return _copy(task, out, "metadata")


def task_v03_json(task: Mapping[str, Any]) -> Json:
    out: Json = {
        "kind": KIND_TASK,
        "id": task["id"],
        "contextId": task["contextId"],
        "status": _status(task["status"], state_v03, message_v03),
    }
    if "history" in task:
        out["history"] = [message_v03(m) for m in task["history"]]
    if "artifacts" in task:
        out["artifacts"] = [_artifact(a, part_v03) for a in task["artifacts"]]
    return _copy(task, out, "metadata")


def _json(model: Message | Task | V1Message | V1Task) -> Json:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def task_v1(task: Task) -> V1Task:
    return V1Task.model_validate(task_v1_json(_json(task)))


def message_to_v1(message: Message) -> V1Message:
    return V1Message.model_validate(message_v1(_json(message)))


# -- the adapters (the dispatch table's 1.0 entries) ---------------------------------------


def _present(**fields: Any) -> Json:
    """The fields that are set: the models refuse an explicit null for an optional field."""
    return {name: value for name, value in fields.items() if value is not None}


def _send_body(method: str, params: V1SendMessageParams | V1SendStreamingMessageParams) -> Json:
    body: Json = {"method": method, "message": message_v03(_json(params.message))}
    config = params.configuration
    if config is not None:
        body["configuration"] = _copy(
            config.model_dump(exclude_none=True), {}, "acceptedOutputModes", "historyLength"
        )
        if config.returnImmediately is not None:
            body["configuration"]["blocking"] = not config.returnImmediately
        if config.taskPushNotificationConfig is not None:
            push = config.taskPushNotificationConfig.model_dump(mode="json", exclude_none=True)
            body["configuration"]["pushNotificationConfig"] = _push_config_v03(push)
    if params.metadata is not None:
        body["metadata"] = params.metadata
    return body


async def send_message(params: V1SendMessageParams, ctx: RpcContext) -> V1SendMessageResult:
    ours = MessageSendParams.model_validate(_send_body(MESSAGE_SEND, params))
    answer = await handlers.message_send.handle(ours, ctx)
    if isinstance(answer, Message):  # the agent's direct reply: no task
        return V1MessagePayload(message=message_to_v1(answer))
    return V1TaskPayload(task=task_v1(answer))


_EVENT_WRAPPERS = {KIND_TASK: "task", KIND_MESSAGE: "message", KIND_STATUS_UPDATE: "statusUpdate",
                   KIND_ARTIFACT_UPDATE: "artifactUpdate"}


def event_v1_json(event: Mapping[str, Any]) -> Json:
    """A 0.3 stream event as a 1.0 StreamResponse: wrapped by its kind, in 1.0's shape."""
    kind = event["kind"]
    if kind == KIND_TASK:
        inner = task_v1_json(event)
    elif kind == KIND_MESSAGE:
        inner = message_v1(event)
    elif kind == KIND_STATUS_UPDATE:
        inner = _copy(event, {
            "taskId": event["taskId"], "contextId": event["contextId"],
            "status": _status(event["status"], state_v1, message_v1),
        }, "metadata")
    else:
        inner = _copy(event, {
            "taskId": event["taskId"], "contextId": event["contextId"],
            "artifact": _artifact(event["artifact"], part_v1),
        }, "append", "lastChunk", "metadata")
    return {_EVENT_WRAPPERS[kind]: inner}


def event_v03_json(response: Mapping[str, Any]) -> Json:
    """A 1.0 StreamResponse as the 0.3 stream event it stands for (what a follower of a 1.0
    peer reads). 1.0's statusUpdate has no `final`: it is true when the stream ends there."""
    (kind, inner), = response.items()
    if kind == "task":
        return task_v03_json(inner)
    if kind == "message":
        return message_v03(inner)
    if kind == "statusUpdate":
        status = _status(inner["status"], state_v03, message_v03)
        return _copy(inner, {
            "kind": KIND_STATUS_UPDATE, "taskId": inner["taskId"], "contextId": inner["contextId"],
            "status": status, "final": status["state"] in STREAM_END_STATES,
        }, "metadata")
    if kind == "artifactUpdate":
        return _copy(inner, {
            "kind": KIND_ARTIFACT_UPDATE, "taskId": inner["taskId"],
            "contextId": inner["contextId"], "artifact": _artifact(inner["artifact"], part_v03),
        }, "append", "lastChunk", "metadata")
    raise ValueError("not a StreamResponse")


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
# 1.0 flattens 0.3's {taskId, pushNotificationConfig} and names one auth scheme where 0.3
# lists them: a config set in either dialect reads the same in the other.


def push_config_v1_json(config: Mapping[str, Any]) -> Json:
    """0.3's PushNotificationConfig as 1.0's config members (taskId not included)."""
    out = _copy(config, {"url": config["url"]}, "id", "token")
    auth = config.get("authentication")
    if auth and auth["schemes"]:
        out["authentication"] = _copy(auth, {"scheme": auth["schemes"][0]}, "credentials")
    return out


def push_config_v1(config: TaskPushNotificationConfig) -> V1TaskPushNotificationConfig:
    document = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    inner = push_config_v1_json(document["pushNotificationConfig"])
    return V1TaskPushNotificationConfig.model_validate({"taskId": document["taskId"], **inner})


def _push_config_v03(config: Mapping[str, Any]) -> Json:
    """A 1.0 config's members as 0.3's PushNotificationConfig (taskId and tenant dropped)."""
    out = _copy(config, {"url": config["url"]}, "id", "token")
    if "authentication" in config:
        auth = config["authentication"]
        out["authentication"] = _copy(auth, {"schemes": [auth["scheme"]]}, "credentials")
    return out


async def create_task_push_notification_config(
    params: V1CreateTaskPushNotificationConfigParams, ctx: RpcContext
) -> V1CreateTaskPushNotificationConfigResult:
    inner = _push_config_v03(params.model_dump(mode="json", by_alias=True, exclude_none=True))
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
