"""This node's calls to a peer that speaks A2A 0.3: the node builds each call as the 1.0
params model (the JSON-RPC 1.0, HTTP+JSON and gRPC bindings write it as it is); a 0.3 peer
gets the same call as the 0.3 params model, mapped here. Answers from a 0.3 peer are read
into the 1.0 objects through `objects.task_v1_json`/`event_v1_json`/`message_v1`.
"""

from __future__ import annotations

from collections.abc import Mapping

from synthorg.dialects.objects import Json, push_config_v03_json, send_v03_json
from synthorg.generated.constants import (
    MESSAGE_SEND,
    MESSAGE_STREAM,
    TASKS_CANCEL,
    TASKS_GET,
    TASKS_PUSH_NOTIFICATION_CONFIG_SET,
    TASKS_RESUBSCRIBE,
    V1_CANCEL_TASK,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    V1_GET_TASK,
    V1_SEND_MESSAGE,
    V1_SEND_STREAMING_MESSAGE,
    V1_SUBSCRIBE_TO_TASK,
)
from synthorg.generated.models import (
    MessageSendParams,
    MessageStreamParams,
    TasksCancelParams,
    TasksGetParams,
    TasksPushNotificationConfigSetParams,
    TasksResubscribeParams,
    V1CancelTaskParams,
    V1CreateTaskPushNotificationConfigParams,
    V1GetTaskParams,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1SubscribeToTaskParams,
)

OutboundParams = (V1SendMessageParams | V1SendStreamingMessageParams | V1GetTaskParams
                  | V1CancelTaskParams | V1SubscribeToTaskParams
                  | V1CreateTaskPushNotificationConfigParams)
V03OutboundParams = (MessageSendParams | MessageStreamParams | TasksGetParams
                     | TasksCancelParams | TasksResubscribeParams
                     | TasksPushNotificationConfigSetParams)
# The 0.3 name of each 1.0 method this node calls.
V03_METHOD_NAMES: Mapping[str, str] = {
    V1_SEND_MESSAGE: MESSAGE_SEND, V1_SEND_STREAMING_MESSAGE: MESSAGE_STREAM,
    V1_GET_TASK: TASKS_GET, V1_CANCEL_TASK: TASKS_CANCEL, V1_SUBSCRIBE_TO_TASK: TASKS_RESUBSCRIBE,
    V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG: TASKS_PUSH_NOTIFICATION_CONFIG_SET,
}


def _members(params: OutboundParams) -> Json:
    """The params' members but the method and the tenant (0.3 has none)."""
    return params.model_dump(mode="json", by_alias=True, exclude_none=True,
                             exclude={"method", "tenant"})


def params_v03(params: OutboundParams) -> V03OutboundParams:
    """A call this node makes, as the 0.3 method's params (the same operation); a 1.0
    member 0.3 has no place for (a tenant) is not sent."""
    if isinstance(params, V1SendMessageParams):
        return MessageSendParams.model_validate(
            {"method": MESSAGE_SEND, **send_v03_json(params)})
    if isinstance(params, V1SendStreamingMessageParams):
        return MessageStreamParams.model_validate(
            {"method": MESSAGE_STREAM, **send_v03_json(params)})
    if isinstance(params, V1GetTaskParams):
        return TasksGetParams.model_validate(_members(params) | {"method": TASKS_GET})
    if isinstance(params, V1CancelTaskParams):
        return TasksCancelParams.model_validate(_members(params) | {"method": TASKS_CANCEL})
    if isinstance(params, V1SubscribeToTaskParams):
        return TasksResubscribeParams(method=TASKS_RESUBSCRIBE, id=params.id)
    return TasksPushNotificationConfigSetParams.model_validate({
        "method": TASKS_PUSH_NOTIFICATION_CONFIG_SET, "taskId": params.taskId,
        "pushNotificationConfig": push_config_v03_json(_members(params)),
    })
