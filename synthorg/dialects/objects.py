"""A2A 0.3 and 1.0 objects mapped both ways: enums, parts, messages, artifacts, tasks, stream
events and push configs, as JSON documents (each side's model validates the result).

A leaf: it imports only the generated modules, so the store (reading data written in either
form), the 0.3 and 1.0 edges and the outbound client can all use it.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import to_json

from synthorg.generated.constants import (
    KIND_ARTIFACT_UPDATE,
    KIND_DATA,
    KIND_FILE,
    KIND_MESSAGE,
    KIND_STATUS_UPDATE,
    KIND_TASK,
    KIND_TEXT,
    STATE_AUTH_REQUIRED,
    STATE_INPUT_REQUIRED,
    STATE_UNKNOWN,
    TASK_STATE_AUTH_REQUIRED,
    TASK_STATE_INPUT_REQUIRED,
    TERMINAL_STATES,
    V1_TERMINAL_STATES,
)
from synthorg.generated.models import (
    Artifact,
    Message,
    MessageSendParams,
    MessageStreamParams,
    StreamEvent,
    Task,
    TaskPushNotificationConfig,
    V1Artifact,
    V1Message,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1StreamResponse,
    V1Task,
    V1TaskPushNotificationConfig,
)
from synthorg.sequenced import Sequenced
from synthorg.settled import is_settled, settle

Json = dict[str, Any]

# Where a stream ends: the task is final, or it waits for the caller.
STREAM_END_STATES = frozenset({*TERMINAL_STATES, STATE_INPUT_REQUIRED, STATE_AUTH_REQUIRED})
V1_STREAM_END_STATES = frozenset(
    {*V1_TERMINAL_STATES, TASK_STATE_INPUT_REQUIRED, TASK_STATE_AUTH_REQUIRED}
)

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


def counts_v03(counts: Mapping[str, int]) -> dict[str, int]:
    """Counts by 1.0 state name as counts by 0.3 name (the metrics' and admin status's)."""
    return {state_v03(state): count for state, count in counts.items()}


# -- objects, as JSON (each side's model validates the result) -----------------------------


def copy_members(source: Mapping[str, Any], target: Json, *names: str) -> Json:
    for name in names:
        if name in source:
            target[name] = source[name]
    return target


def part_v03(part: Mapping[str, Any]) -> Json:
    if "text" in part:
        return copy_members(part, {"kind": KIND_TEXT, "text": part["text"]}, "metadata")
    if "data" in part:
        return copy_members(part, {"kind": KIND_DATA, "data": part["data"]}, "metadata")
    file: Json = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
    if "mediaType" in part:
        file["mimeType"] = part["mediaType"]
    if "filename" in part:
        file["name"] = part["filename"]
    return copy_members(part, {"kind": KIND_FILE, "file": file}, "metadata")


def part_v1(part: Mapping[str, Any]) -> Json:
    kind = part["kind"]
    if kind == KIND_TEXT:
        return copy_members(part, {"text": part["text"]}, "metadata")
    if kind == KIND_DATA:
        return copy_members(part, {"data": part["data"]}, "metadata")
    file = part["file"]
    out: Json = {"raw": file["bytes"]} if "bytes" in file else {"url": file["uri"]}
    if "mimeType" in file:
        out["mediaType"] = file["mimeType"]
    if "name" in file:
        out["filename"] = file["name"]
    return copy_members(part, out, "metadata")


_MESSAGE_FIELDS = ("contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def message_v03(message: Mapping[str, Any]) -> Json:
    out: Json = {
        "kind": KIND_MESSAGE,
        "messageId": message["messageId"],
        "role": message["role"].removeprefix(_ROLE_PREFIX).lower(),
        "parts": [part_v03(part) for part in message["parts"]],
    }
    return copy_members(message, out, *_MESSAGE_FIELDS)


def message_v1(message: Mapping[str, Any]) -> Json:
    out: Json = {
        "messageId": message["messageId"],
        "role": _ROLE_PREFIX + message["role"].upper(),
        "parts": [part_v1(part) for part in message["parts"]],
    }
    return copy_members(message, out, *_MESSAGE_FIELDS)


def _artifact(artifact: Mapping[str, Any], part: Any) -> Json:
    out: Json = {"artifactId": artifact["artifactId"]}
    out["parts"] = [part(p) for p in artifact["parts"]]
    return copy_members(artifact, out, "name", "description", "metadata", "extensions")


def _status(status: Mapping[str, Any], state: Any, message: Any) -> Json:
    out: Json = {"state": state(status["state"])}
    if "message" in status:
        out["message"] = message(status["message"])
    return copy_members(status, out, "timestamp")


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
    return copy_members(task, out, "metadata")


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
    return copy_members(task, out, "metadata")


def as_json(model: Message | Task | Artifact | V1Message | V1Task | V1Artifact) -> Json:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def task_v1(task: Task) -> V1Task:
    return V1Task.model_validate(task_v1_json(as_json(task)))


def message_to_v1(message: Message) -> V1Message:
    return V1Message.model_validate(message_v1(as_json(message)))


def message_from_v1(message: V1Message) -> Message:
    return Message.model_validate(message_v03(as_json(message)))


def artifact_v1(artifact: Artifact) -> V1Artifact:
    return V1Artifact.model_validate(_artifact(as_json(artifact), part_v1))


def artifact_v03(artifact: V1Artifact) -> Artifact:
    return Artifact.model_validate(_artifact(as_json(artifact), part_v03))



# -- 1.0 objects as 0.3 models (what the 0.3 edge answers) ---------------------------------
# Through JSON: pydantic's serializer and validator run in Rust, so a dump, the mapping and a
# validation (~14 us for a small task) cost less than building the 0.3 models field by field
# in Python without validation (~17 us, measured).


def _dump(model: Any) -> Json:
    document: Json = model.__pydantic_serializer__.to_python(
        model, mode="json", by_alias=True, exclude_none=True
    )
    return document


# The 0.3 Task made for each 1.0 task object still alive, by the object's id (weakly: the
# entry goes with the object). The store's cache hands out the same V1Task while a task's
# version stands, so a 0.3 caller polling tasks/get converts each version once; a task
# answered once (a send's) is converted, answered and dropped. Neither side is mutated.
_V03_OF: dict[int, tuple[weakref.ref[V1Task], Task]] = {}


def _forget(key: int) -> Callable[[object], None]:
    def forget(_: object) -> None:
        _V03_OF.pop(key, None)
    return forget


def task_v03(task: V1Task) -> Task:
    key = id(task)
    found = _V03_OF.get(key)
    if found is not None and found[0]() is task:
        return found[1]
    converted = Task.model_validate(task_v03_json(_dump(task)))
    _V03_OF[key] = (weakref.ref(task, _forget(key)), converted)
    if is_settled(task):  # answered again while `task` stands, and as unchanging
        settle(converted)
    return converted


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
        inner = copy_members(event, {
            "taskId": event["taskId"], "contextId": event["contextId"],
            "status": _status(event["status"], state_v1, message_v1),
        }, "metadata")
    else:
        inner = copy_members(event, {
            "taskId": event["taskId"], "contextId": event["contextId"],
            "artifact": _artifact(event["artifact"], part_v1),
        }, "append", "lastChunk", "metadata")
    return {_EVENT_WRAPPERS[kind]: inner}


_STREAM_RESPONSE: TypeAdapter[V1StreamResponse] = TypeAdapter(V1StreamResponse)


def stream_response_v1(event: StreamEvent) -> V1StreamResponse:
    document = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    response: V1StreamResponse = _STREAM_RESPONSE.validate_python(event_v1_json(document))
    return response


_STREAM_EVENT: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def stream_event_v03(response: V1StreamResponse) -> StreamEvent:
    """A 1.0 StreamResponse as the 0.3 stream event it stands for."""
    event: StreamEvent = _STREAM_EVENT.validate_python(event_v03_json(_dump(response)))
    return event


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
        return copy_members(inner, {
            "kind": KIND_STATUS_UPDATE, "taskId": inner["taskId"], "contextId": inner["contextId"],
            "status": status, "final": status["state"] in STREAM_END_STATES,
        }, "metadata")
    if kind == "artifactUpdate":
        return copy_members(inner, {
            "kind": KIND_ARTIFACT_UPDATE, "taskId": inner["taskId"],
            "contextId": inner["contextId"], "artifact": _artifact(inner["artifact"], part_v03),
        }, "append", "lastChunk", "metadata")
    raise ValueError("not a StreamResponse")



# -- push notification configs: 1.0 flattens 0.3's {taskId, pushNotificationConfig} and names
# one auth scheme where 0.3 lists them, so a config set in either dialect reads the same in the
# other.


def push_config_v1_json(config: Mapping[str, Any]) -> Json:
    """0.3's PushNotificationConfig as 1.0's config members (taskId not included)."""
    out = copy_members(config, {"url": config["url"]}, "id", "token")
    auth = config.get("authentication")
    if auth and auth["schemes"]:
        out["authentication"] = copy_members(auth, {"scheme": auth["schemes"][0]}, "credentials")
    return out


def push_config_v1(config: TaskPushNotificationConfig) -> V1TaskPushNotificationConfig:
    document = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    inner = push_config_v1_json(document["pushNotificationConfig"])
    return V1TaskPushNotificationConfig.model_validate({"taskId": document["taskId"], **inner})


def push_config_v03_json(config: Mapping[str, Any]) -> Json:
    """A 1.0 config's members as 0.3's PushNotificationConfig (taskId and tenant dropped)."""
    out = copy_members(config, {"url": config["url"]}, "id", "token")
    if "authentication" in config:
        auth = config["authentication"]
        out["authentication"] = copy_members(auth, {"schemes": [auth["scheme"]]}, "credentials")
    return out


# -- a message sent: 0.3's MessageSendParams as 1.0's SendMessageRequest, and back (without
# `method`)


def send_v1_json(params: MessageSendParams | MessageStreamParams) -> Json:
    """The message, configuration (0.3's `blocking` is returnImmediately negated) and
    metadata of a 0.3 send as 1.0's params members. A push config is left out: the send's
    caller registers it as the push service keeps it (`handlers.rules.send`)."""
    body: Json = {"message": message_v1(_dump(params.message))}
    config = params.configuration
    if config is not None:
        ours = copy_members(
            config.model_dump(exclude_none=True), {}, "acceptedOutputModes", "historyLength"
        )
        if config.blocking is not None:
            ours["returnImmediately"] = not config.blocking
        body["configuration"] = ours
    if params.metadata is not None:
        body["metadata"] = params.metadata
    return body


def stream_item_v03(item: Sequenced[V1StreamResponse]) -> Sequenced[StreamEvent]:
    """A stream's event as the 0.3 event it stands for; one read from the log keeps its JSON
    (`raw`, converted as JSON) so every subscriber is sent the same bytes."""
    if item.raw is None:
        return Sequenced(item.seq, stream_event_v03(item.event), quiet=item.quiet)
    document = event_v03_json(json.loads(item.raw))
    event: StreamEvent = _STREAM_EVENT.validate_python(document)
    return Sequenced(item.seq, event, to_json(document), item.quiet)


def send_v03_json(params: V1SendMessageParams | V1SendStreamingMessageParams) -> Json:
    """The message, its configuration (returnImmediately is 0.3's `blocking` negated) and
    metadata of a 1.0 send, as 0.3's params members."""
    body: Json = {"message": message_v03(as_json(params.message))}
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
