"""Push targets whose host does not resolve: accepted when a config is set (a name may resolve
later; every delivery resolves it again), while what is refused stays refused. Tests reach no
DNS server, so the event loop's resolver here answers no name at all, as an unreachable or
empty DNS does; everything else is real (a SQLite store, the guard, the configs service)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from synthorg.errors import InvalidParams
from synthorg.generated.models import PushNotificationConfig
from synthorg.push.configs import PushConfigs
from synthorg.push.ssrf import TargetGuard, TargetRefused, Unresolved
from synthorg.store.sqlite.backend import SqliteStores

T = TypeVar("T")


class NoDnsLoop(asyncio.SelectorEventLoop):
    async def getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        host.encode("idna")  # as the socket module does first: not a name, UnicodeError
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def run(coro: Coroutine[Any, Any, T]) -> T:
    loop = NoDnsLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[SqliteStores]:
    opened = SqliteStores(tmp_path)
    yield opened
    opened.close()


def configs(stores: SqliteStores) -> PushConfigs:
    return PushConfigs(stores.tasks, stores.push_configs, TargetGuard(stores.catalog))


def test_the_guard_tells_a_name_that_does_not_resolve_from_a_refusal(
    stores: SqliteStores,
) -> None:
    guard = TargetGuard(stores.catalog)
    with pytest.raises(Unresolved):
        run(guard.check("https://hooks.example.org/a2a"))
    with pytest.raises(TargetRefused) as refused:
        run(guard.check("https://bad..name/a2a"))
    assert not isinstance(refused.value, Unresolved)


def test_a_config_whose_host_does_not_resolve_yet_is_accepted(stores: SqliteStores) -> None:
    run(configs(stores).check("peer-a", PushNotificationConfig(url="https://hooks.example.org/a2a")))


@pytest.mark.parametrize("url", [
    "https://bad..name/a2a",  # not a name
    "http://169.254.169.254/latest/meta-data",  # a metadata address, no lookup needed
    "ftp://hooks.example.org/a2a",  # not http(s)
])
def test_what_is_refused_stays_refused(stores: SqliteStores, url: str) -> None:
    with pytest.raises(InvalidParams):
        run(configs(stores).check("peer-a", PushNotificationConfig(url=url)))
