"""The value in force for each runtime setting: the runtime write, else config.yaml, else the
default. Reads are cheap (a cached dict, refreshed only when the store moved), so the hot path
can ask on every request and a write applies from the next one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from synthorg.generated.models import A2AConfig
from synthorg.settings.definitions.a2a import NAMESPACE, SettingDefinition, definitions
from synthorg.store.settings import SettingsStore

Source = Literal["runtime", "config", "default"]


@dataclass(frozen=True)
class SettingView:
    definition: SettingDefinition
    value: float | int
    source: Source


class UnknownSetting(KeyError):
    def __str__(self) -> str:
        return f"unknown setting {self.args[0]!r}; known: " + ", ".join(
            d.name for d in definitions().values()
        )


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
            before = {key: self.view(key, refresh=False).value for key in definitions()}
            self._writes = self._store.read_all(NAMESPACE)
            for key, old in before.items():
                new = self.view(key, refresh=False).value
                if new != old:
                    self._notify(key, new)

    def _notify(self, key: str, value: float | int) -> None:
        for listener in self._listeners:
            listener(key, value)

    @staticmethod
    def definition(name: str) -> SettingDefinition:
        key = name.removeprefix(f"{NAMESPACE}.")
        found = definitions().get(key)
        if found is None:
            raise UnknownSetting(name)
        return found

    def view(self, name: str, *, refresh: bool = True) -> SettingView:
        definition = self.definition(name)
        if refresh:
            self._refresh()
        key = definition.key
        if key in self._writes:
            try:
                return SettingView(definition, definition.coerce(self._writes[key]), "runtime")
            except ValueError:
                pass  # a corrupt stored value never wins over a valid file or default
        if key in self._configured:
            return SettingView(definition, getattr(self._config, key), "config")
        return SettingView(definition, definition.default, "default")

    def value(self, name: str) -> float | int:
        return self.view(name).value

    def all(self) -> list[SettingView]:
        self._refresh()
        return [self.view(key, refresh=False) for key in definitions()]

    def set(self, name: str, raw: Any) -> tuple[SettingView, Any]:
        """Validate then write; returns (new view, previous runtime value or None)."""
        definition = self.definition(name)
        value = definition.coerce(raw)
        previous = self._store.write(NAMESPACE, definition.key, value)
        self._writes = self._store.read_all(NAMESPACE)
        self._notify(definition.key, value)
        return self.view(name, refresh=False), previous

    def reset(self, name: str) -> tuple[SettingView, Any]:
        definition = self.definition(name)
        previous = self._store.reset(NAMESPACE, definition.key)
        self._writes = self._store.read_all(NAMESPACE)
        view = self.view(name, refresh=False)
        self._notify(definition.key, view.value)
        return view, previous

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
