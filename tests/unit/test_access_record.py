"""A call that is not an HTTP request (a gRPC call) gets its access record from
`call_started`: the same record an HTTP request's has, its method a bounded label, and the
observers' hooks in the same order."""

from __future__ import annotations

from synthorg.observability.access import (
    OTHER,
    RequestRecord,
    call_started,
    finished,
    operation_of,
)


class Hooks:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, int]] = []

    def started(self, record: RequestRecord) -> None:
        self.seen.append(("started", record.method, record.bytes_in))

    def admitted(self, record: RequestRecord) -> None:
        self.seen.append(("admitted", record.method, record.bytes_in))

    def method(self, record: RequestRecord) -> None:
        self.seen.append(("method", record.method, record.bytes_in))

    def finished(self, record: RequestRecord) -> None:
        self.seen.append(("finished", record.method, record.status))


def test_a_call_record_has_its_method_and_bytes_when_its_observers_start() -> None:
    hooks = Hooks()
    headers = ((b"x-a2a-peer-name", b"peer-a"),)
    record = call_started("grpc", "GetTask", "1.0", headers, 12, (hooks,))
    assert (record.operation, record.http_method, record.dialect) == ("grpc", "POST", "1.0")
    assert record.headers == headers and record.peer is None and record.status == 0
    assert hooks.seen == [("started", "GetTask", 12)]
    record.status = 5
    finished(record)
    assert hooks.seen[-1] == ("finished", "GetTask", 5)


def test_a_method_the_spec_does_not_define_is_other() -> None:
    assert call_started("grpc", "NoSuchRpc", "1.0", (), 0).method == OTHER


def test_an_operation_is_the_same_from_the_memo_and_the_memo_is_bounded() -> None:
    cases = [
        ("POST", "/api/v1/a2a/", "gateway.rpc"),
        ("GET", "/api/v1/a2a/rest/tasks/t-1", "gateway.rest.get_task"),
        ("POST", "/api/v1/a2a/rest/tasks/t-1:cancel", "gateway.rest.cancel_task"),
        ("GET", "/api/v1/a2a/", "gateway.rpc"),  # a wrong method on a known path
        ("GET", "/no/such/path", OTHER),
    ]
    for _ in range(2):  # the second round answers from the memo
        assert [operation_of(m, p) for m, p, _ in cases] == [op for _, _, op in cases]
    for i in range(2000):  # caller-chosen paths do not grow it without bound
        operation_of("GET", f"/api/v1/a2a/rest/tasks/t-{i}")
    info = operation_of.cache_info()
    assert info.maxsize is not None and info.currsize <= info.maxsize
