"""The one owner of the runtime settings: it names them, validates a value, resolves the value
in force (the runtime write, else config.yaml, else the default) and returns what a write or a
reset changed, before and after.

The admin service, the admin API and the CLI only call it: a setting is looked up, and a value
checked, here and nowhere else. Reads are cheap (a cached dict, refreshed only when the store
moved), so the hot path can ask on every request and a write applies from the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from synthorg.errors import InvalidValue, UnknownSetting
from synthorg.generated.models import A2AConfig
from synthorg.settings.definitions.a2a import NAMESPACE, SettingDefinition, definitions
from synthorg.store.settings import SettingsStore

Source = Literal["runtime", "config", "default"]
_MAX_NAME_SHOWN = 80


@dataclass(frozen=True)
class SettingView:
    definition: SettingDefinition
    value: float | int
    source: Source


@dataclass(frozen=True)
class SettingChange:
    """What one write or reset did: the value in force before it and after it."""

    before: SettingView
    after: SettingView


def _shown(name: str) -> str:
    clipped = name[:_MAX_NAME_SHOWN]
    return repr(clipped) + ("..." if len(name) > _MAX_NAME_SHOWN else "")


def setting_definition(name: str, *, allow_bare: bool = False) -> SettingDefinition:
    """The setting `name` names (`a2a.key`; also plain `key` when `allow_bare`), else
    UnknownSetting listing the known ones."""
    prefix = f"{NAMESPACE}."
    key = name[len(prefix):] if name.startswith(prefix) else (name if allow_bare else None)
    found = definitions().get(key) if key is not None else None
    if found is None:
        known = ", ".join(d.name for d in definitions().values())
        raise UnknownSetting(f"unknown setting {_shown(name)}; known: {known}")
    return found


def checked(definition: SettingDefinition, raw: Any) -> float | int:
    """`raw` if it has the setting's type and range, else InvalidValue naming both."""
    try:
        return definition.coerce(raw)
    except ValueError as exc:
        raise InvalidValue(str(exc), key=definition.name,
                           allowed=definition.describe_range()) from None


class RuntimeSettings:
    def __init__(self, store: SettingsStore, config: A2AConfig) -> None:
        self._store = store
        self._config = config
        self._configured = config.model_fields_set  # keys written in config.yaml
        self._writes: dict[str, Any] = store.read_all(NAMESPACE)
        self._listeners: list[Callable[[str, float | int], None]] = []

    def on_change(self, listener: Callable[[str, float | int], None]) -> None:
        self._listeners.append(listener)

    def _refresh(self) -> None:
        if self._store.changed_elsewhere():
            before = {key: self._resolve(d).value for key, d in definitions().items()}
            self._writes = self._store.read_all(NAMESPACE)
            for key, old in before.items():
                new = self._resolve(definitions()[key]).value
                if new != old:
                    self._notify(key, new)

    def _notify(self, key: str, value: float | int) -> None:
        for listener in self._listeners:
            listener(key, value)

    @staticmethod
    def definition(name: str, *, allow_bare: bool = True) -> SettingDefinition:
        return setting_definition(name, allow_bare=allow_bare)

    def _resolve(self, definition: SettingDefinition, runtime: Any = None,
                 written: bool | None = None) -> SettingView:
        """The view in force given the runtime write (by default, the one cached)."""
        key = definition.key
        if written is None:
            written, runtime = key in self._writes, self._writes.get(key)
        if written:
            try:
                return SettingView(definition, definition.coerce(runtime), "runtime")
            except ValueError:
                pass  # a corrupt stored value never wins over a valid file or default
        if key in self._configured:
            return SettingView(definition, getattr(self._config, key), "config")
        return SettingView(definition, definition.default, "default")

    def view(self, name: str, *, allow_bare: bool = True) -> SettingView:
        definition = self.definition(name, allow_bare=allow_bare)
        self._refresh()
        return self._resolve(definition)

    def value(self, name: str) -> float | int:
        return self.view(name).value

    def all(self) -> list[SettingView]:
        self._refresh()
        return [self._resolve(d) for d in definitions().values()]

    def set(self, name: str, raw: Any, *, allow_bare: bool = True) -> SettingChange:
        """Validate, then write; the value before is the one this write replaced (a write
        elsewhere in between is not lost from the trail: its own change recorded it)."""
        definition = self.definition(name, allow_bare=allow_bare)
        value = checked(definition, raw)
        previous = self._store.write(NAMESPACE, definition.key, value)
        return self._changed(definition, previous)

    def reset(self, name: str, *, allow_bare: bool = True) -> SettingChange:
        definition = self.definition(name, allow_bare=allow_bare)
        previous = self._store.reset(NAMESPACE, definition.key)
        return self._changed(definition, previous)

    def _changed(self, definition: SettingDefinition, previous: Any) -> SettingChange:
        before = self._resolve(definition, previous, previous is not None)
        self._writes = self._store.read_all(NAMESPACE)
        after = self._resolve(definition)
        self._notify(definition.key, after.value)
        return SettingChange(before, after)

    # Typed accessors for the hot path.
    @property
    def max_message_parts(self) -> int:
        return int(self.value("max_message_parts"))

    @property
    def client_timeout_seconds(self) -> float:
        return float(self.value("client_timeout_seconds"))

    @property
    def card_cache_max_entries(self) -> int:
        return int(self.value("card_cache_max_entries"))

    @property
    def push_verification_clock_skew_seconds(self) -> int:
        return int(self.value("push_verification_clock_skew_seconds"))

    @property
    def peer_rate_limit_per_second(self) -> float:
        return float(self.value("peer_rate_limit_per_second"))

    @property
    def peer_rate_limit_burst(self) -> int:
        return int(self.value("peer_rate_limit_burst"))
