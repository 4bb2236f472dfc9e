"""This node's calls to a peer that speaks A2A 1.0: the node builds each call as the 0.3
params model; a 1.0 peer gets the same call as the 1.0 params model, mapped here (the binding
then writes it: JSON-RPC, HTTP+JSON or gRPC). Answers come back through
`objects.task_v03_json`/`event_v03_json`: a peer's answer is read leniently (members this node
does not know are dropped) and the 0.3 model validates what is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synthorg.dialects.objects import Json, message_to_v1, push_config_v1_json
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
    MessageSendConfiguration,
    MessageSendParams,
    MessageStreamParams,
    TasksCancelParams,
    TasksGetParams,
    TasksPushNotificationConfigSetParams,
    TasksResubscribeParams,
    V1CancelTaskParams,
    V1CreateTaskPushNotificationConfigParams,
    V1GetTaskParams,
    V1SendMessageConfiguration,
    V1SendMessageParams,
    V1SendStreamingMessageParams,
    V1SubscribeToTaskParams,
)


def _present(**fields: Any) -> Json:
    """The fields that are set: the models refuse an explicit null for an optional field."""
    return {name: value for name, value in fields.items() if value is not None}


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
