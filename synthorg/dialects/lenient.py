"""A peer's JSON read leniently into the spec's models: the members a model does not define
are dropped, at any depth, so a peer on a later revision of its dialect is still understood;
everything a model defines is kept for its own validation to judge.

Generic over the generated models (their fields and types say what is known): per model,
its members by the name it is validated by and, for each, how to read a value of the
member's type (a nested model, a list or dict of them, a union), built once and cached.
`validate` filters only an answer its validation finds unknown members in, so the usual
answer costs its validation alone.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

Reader = Callable[[Any], Any]
M = TypeVar("M", bound=BaseModel)
_UNKNOWN = "extra_forbidden"  # the generated models' error for a member they do not define

# A model's members: the key a member is validated by -> how to read its value (None: as is).
_MEMBERS: dict[type[BaseModel], dict[str, Reader | None]] = {}
# A member of a union of models: the keys it needs and those it knows.
_Choice = tuple[type[BaseModel], frozenset[str], frozenset[str]]


def validate(model: type[M], data: Any) -> M:
    """`data` validated as `model`, leniently: an answer with only members the model defines
    (the usual one) is validated as it is; one the validation finds unknown members in is
    validated again with them dropped (`known`). ValidationError for what is invalid still."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        if not any(error["type"] == _UNKNOWN for error in exc.errors(include_url=False)):
            raise
    return model.model_validate(known(model, data))


def known(model: type[BaseModel], data: Any) -> Any:
    """`data` with only the members `model` defines (recursively); what is not a JSON
    object is handed back as is, for the model's validation to refuse."""
    if not isinstance(data, dict):
        return data
    members = _MEMBERS.get(model)
    if members is None:
        members = _members(model)
    out = {}
    for key, value in data.items():
        if key in members:
            read = members[key]
            out[key] = value if read is None else read(value)
    return out


def _reader(annotation: Any) -> Reader | None:
    """How to read a value of type `annotation` leniently (None: it holds no model, so as
    is). A union of models reads a value as the member it fits (`one_of`)."""
    annotation = _unwrapped(annotation)
    model = _model_of(annotation)
    if model is not None:
        return partial(known, model)
    origin = get_origin(annotation)
    if origin is list:
        inner = _reader(get_args(annotation)[0])
        return None if inner is None else partial(_list, inner)
    if origin is dict:
        inner = _reader(get_args(annotation)[1])
        return None if inner is None else partial(_dict, inner)
    if origin is Union or origin is types.UnionType:
        return _union(get_args(annotation))
    return None


def one_of(choices: tuple[_Choice, ...], data: Any) -> type[BaseModel] | None:
    """The member of a union of models a JSON object stands for: of those whose required
    members it has all of, the one it has the most known members of (the first on a tie),
    as a union's validation prefers the member that fits it best. None if none fits."""
    if not isinstance(data, dict):
        return None
    keys = data.keys()
    best: type[BaseModel] | None = None
    most = -1
    for model, required, names in choices:
        if required <= keys:
            count = len(names & keys)
            if count > most:
                best, most = model, count
    return best


def choices(*models: type[BaseModel]) -> tuple[_Choice, ...]:
    """The members of a union of models as `one_of` weighs them."""
    out = []
    for model in models:
        keys = _keys(model)
        required = frozenset(key for key, info in keys if info.is_required())
        out.append((model, required, frozenset(key for key, _ in keys)))
    return tuple(out)


def _keys(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The keys `model` validates its members by, each with its member's field."""
    if not model.__pydantic_complete__:
        model.model_rebuild()  # one naming a model defined after it (validation would too)
    config = model.model_config
    by_name = bool(config.get("populate_by_name") or config.get("validate_by_name"))
    keys = []
    for name, info in model.model_fields.items():
        keys.append((name if info.alias is None else info.alias, info))
        if by_name and info.alias is not None:
            keys.append((name, info))
    return keys


def _members(model: type[BaseModel]) -> dict[str, Reader | None]:
    members = {key: _reader(info.annotation) for key, info in _keys(model)}
    _MEMBERS[model] = members
    return members


def _union(args: tuple[Any, ...]) -> Reader | None:
    members = [arg for arg in args if arg is not types.NoneType]
    if len(members) == 1:  # `X | None`
        return _reader(members[0])
    models = [model for model in map(_model_of, members) if model is not None]
    if models:  # a JSON object is read as the model it fits; anything else as is
        return partial(_one_of_reader, choices(*models))
    readers = [read for read in map(_reader, members) if read is not None]
    return readers[0] if len(readers) == 1 else None


def _unwrapped(annotation: Any) -> Any:
    """The type under any `Annotated[...]` layers."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    annotation = _unwrapped(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _one_of_reader(options: tuple[_Choice, ...], data: Any) -> Any:
    model = one_of(options, data)
    return data if model is None else known(model, data)


def _list(inner: Reader, data: Any) -> Any:
    return [inner(item) for item in data] if isinstance(data, list) else data


def _dict(inner: Reader, data: Any) -> Any:
    if not isinstance(data, Mapping):
        return data
    return {key: inner(value) for key, value in data.items()}
