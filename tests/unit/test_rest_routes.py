"""The HTTP+JSON binding's route table: every spec route names its 1.0 method, a path picks the
most specific template, and an agent's routes carry the agent's id apart from the params."""

from __future__ import annotations

from synthorg.dialects.errors import http_error
from synthorg.gateway.rest import OPERATIONS_REST, PREFIX, rest_target
from synthorg.generated import constants as spec
from synthorg.generated.models import V1HttpError


def test_every_route_of_the_spec_is_served() -> None:
    assert {op for op in spec.OPERATIONS if op.operation_id.startswith("gateway.rest.")} == set(
        OPERATIONS_REST)
    for op in OPERATIONS_REST:
        path = op.path.replace("{agent_id}", "echo").replace("{taskId}", "t-1")
        target = rest_target(path.replace("{id}", "x-1"))
        assert target is not None and op.method in target.routes, op


def test_a_suffixed_task_path_is_not_read_as_a_task_id() -> None:
    subscribe = rest_target(f"{PREFIX}tasks/a:b:subscribe")
    assert subscribe is not None
    assert subscribe.routes["GET"].method == spec.V1_SUBSCRIBE_TO_TASK
    assert subscribe.path_params == {"id": "a:b"}
    get = rest_target(f"{PREFIX}tasks/a:b")
    assert get is not None and get.routes["GET"].method == spec.V1_GET_TASK
    assert get.path_params == {"id": "a:b"} and set(get.routes) == {"GET"}
    cancel = rest_target(f"{PREFIX}tasks/a:cancel")
    assert cancel is not None and set(cancel.routes) == {"POST"}


def test_an_agents_route_carries_its_id_apart() -> None:
    target = rest_target("/api/v1/a2a/agents/echo/rest/tasks/t-1/pushNotificationConfigs/c-1")
    assert target is not None and target.agent == "echo"
    assert target.path_params == {"taskId": "t-1", "id": "c-1"}
    assert set(target.routes) == {"GET", "DELETE"}


def test_paths_of_no_route_are_none() -> None:
    for path in (f"{PREFIX}tasks/x/", f"{PREFIX}nothing", f"{PREFIX}tasks/a/b", "/api/v1/a2a/",
                 "/api/v1/a2a/agents/echo/", f"{PREFIX}message:send/"):
        assert rest_target(path) is None, path


def test_errors_are_google_rpc_status_with_the_json_rpc_details() -> None:
    status, body = http_error(spec.TASK_NOT_FOUND, None, {"taskId": "t-1"})
    error = V1HttpError.model_validate_json(body).error
    assert (status, error.code, error.status) == (404, 404, "NOT_FOUND")
    assert error.message == spec.TASK_NOT_FOUND.message
    # A refusal made before the method keeps its own status (413 here, not 400).
    status, body = http_error(spec.INVALID_REQUEST, "too large", None, 413)
    assert status == 413 and V1HttpError.model_validate_json(body).error.code == 413
    assert http_error(spec.TASK_NOT_CANCELABLE)[0] == 400  # A2A 1.0's table
    assert http_error(spec.V1_CONTENT_TYPE_NOT_SUPPORTED)[0] == 415
