"""Reading JSON leniently into the generated models (synthorg/dialects/lenient.py): what a
model does not define is dropped at any depth, what it defines is kept and validated."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from synthorg.dialects import lenient
from synthorg.generated.models import (
    FileWithBytes,
    V1ArtifactUpdatePayload,
    V1DataPart,
    V1Message,
    V1RawPart,
    V1StatusUpdatePayload,
    V1StreamResponse,
    V1Task,
    V1TextPart,
    V1UrlPart,
)


def message(**extra: Any) -> dict[str, Any]:
    return {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}], **extra}


def test_unknown_members_are_dropped_at_the_top_and_nested() -> None:
    answer = {
        "id": "t-1", "contextId": "c-1", "later": {"x": 1},
        "status": {"state": "TASK_STATE_COMPLETED", "reason": "r", "message": message(mood=1)},
        "history": [message(seen=True), message(messageId="m-2")],
        "artifacts": [{"artifactId": "a-1", "size": 3, "parts": [
            {"text": "one", "lang": "en"}, {"data": {"k": [1, 2]}, "schema": "s"},
            {"raw": "aGk=", "sha": "x"}, {"url": "https://example.org/f", "etag": "e"},
        ]}],
    }
    read = lenient.known(V1Task, answer)
    assert "later" not in read and "reason" not in read["status"]
    assert "mood" not in read["status"]["message"]
    assert [set(m) for m in read["history"]] == [{"messageId", "role", "parts"}] * 2
    artifact = read["artifacts"][0]
    assert "size" not in artifact
    assert artifact["parts"] == [{"text": "one"}, {"data": {"k": [1, 2]}}, {"raw": "aGk="},
                                 {"url": "https://example.org/f"}]
    task = V1Task.model_validate(read)
    assert [type(p) for p in task.artifacts[0].parts] == [  # type: ignore[index]
        V1TextPart, V1DataPart, V1RawPart, V1UrlPart]
    # the document itself is left as it was
    assert answer["later"] == {"x": 1} and "lang" in answer["artifacts"][0]["parts"][0]


def test_every_member_the_model_defines_is_kept() -> None:
    full = message(
        contextId="c-1", taskId="t-1", metadata={"k": {"n": [1, "two"]}},
        extensions=["https://example.org/ext"], referenceTaskIds=["t-0"],
        parts=[{"text": "# hi", "mediaType": "text/markdown", "filename": "hi.md",
                "metadata": {"p": 1}}],
    )
    assert lenient.known(V1Message, full) == full
    assert V1Message.model_validate(lenient.known(V1Message, full)).parts[0] == V1TextPart(
        text="# hi", mediaType="text/markdown", filename="hi.md", metadata={"p": 1})


def test_free_form_members_are_kept_whole() -> None:
    # metadata and a data part's data are the peer's own JSON: nothing in them is dropped
    part = {"data": {"anything": {"deep": True}}, "metadata": {"extra": {"a": 1}}}
    assert lenient.known(V1DataPart, part) == part


def test_an_invalid_known_member_is_still_refused() -> None:
    bad = {"id": "t-1", "contextId": "c-1", "status": {"state": "exploded", "later": 1}}
    with pytest.raises(ValidationError) as caught:
        V1Task.model_validate(lenient.known(V1Task, bad))
    assert caught.value.error_count() == 1
    with pytest.raises(ValidationError):  # a part that is none of the oneof's members
        V1Message.model_validate(lenient.known(V1Message, message(parts=[{"other": 1}])))
    with pytest.raises(ValidationError):  # not an object where one is defined
        V1Task.model_validate(lenient.known(V1Task, {"id": "t", "contextId": "c",
                                                     "status": ["x"]}))
    assert lenient.known(V1Task, "not an object") == "not an object"


def test_a_union_reads_an_object_as_the_member_it_fits_best() -> None:
    events = lenient.choices(*get_args(V1StreamResponse))
    status = {"statusUpdate": {}}
    assert lenient.one_of(events, status) is V1StatusUpdatePayload
    assert lenient.one_of(events, {"artifactUpdate": {}, "x": 1}) is V1ArtifactUpdatePayload
    assert lenient.one_of(events, {"other": {}}) is None
    assert lenient.one_of(events, ["statusUpdate"]) is None
    parts = lenient.choices(V1TextPart, V1RawPart, V1UrlPart, V1DataPart)
    # both fit: the first of the union, as the 0.3 mapping read it
    assert lenient.one_of(parts, {"text": "t", "raw": "aGk="}) is V1TextPart


def test_members_are_known_by_alias_and_by_name_only_where_the_model_allows_it() -> None:
    assert lenient.known(FileWithBytes, {"bytes": "aGk=", "bytes_": "x"}) == {"bytes": "aGk="}

    class Named(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        kind: str = Field(alias="type")
        inner: FileWithBytes | None = None

    read = lenient.known(Named, {"type": "a", "kind": "b", "inner": {"bytes": "aGk=", "z": 1}})
    assert read == {"type": "a", "kind": "b", "inner": {"bytes": "aGk="}}


def test_validate_drops_unknown_members_only_when_there_are_some() -> None:
    plain = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}
    assert lenient.validate(V1Task, plain) == V1Task.model_validate(plain)
    later = {**plain, "status": {"state": "TASK_STATE_WORKING", "since": 3}, "later": []}
    assert lenient.validate(V1Task, later) == V1Task.model_validate(plain)
    # an invalid member is refused; the unknown ones beside it are not counted as problems
    with pytest.raises(ValidationError) as caught:
        lenient.validate(V1Task, {**later, "contextId": ""})
    assert caught.value.error_count() == 1
